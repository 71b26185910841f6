// Cost of Octopus in an RLC-like transmit queue: the same packet schedule through a plain FIFO
// and through the FIFO with liboctopus (header parse on enqueue, Algorithm 1 on enqueue, at
// the head and per slot), like for like, interleaved runs, median of each. Prints JSON.
//
// The schedule follows the paper's overhead measurement (SEC'23 §7: the dropper active, no
// congestion): every message is a dropper message and carries a bitrate threshold, so each
// message's first packet runs the full decision (table scan and max-min share over 4 streams),
// but no message qualifies for a drop and both queues send exactly the same bytes. The queue
// holds a constant backlog (so the served rate is known) and dequeue copies each packet's bytes
// into the transport block, as an RLC entity builds its PDU. `bare_*` repeats the run without
// the copy: a pure descriptor queue, the worst case for the ratio. `parse_only_*` runs the FIFO
// that only parses each arrival's header (no Algorithm 1): what reading the header costs before
// the dropper does anything, a floor for any design that parses on enqueue as SEC'23 §5 does.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "octopus/dropper.h"
#include "octopus/header.h"

namespace {

constexpr std::size_t n_packets = 1U << 20;
constexpr std::size_t body_arena = 4U << 20;
constexpr unsigned per_slot = 8;
constexpr unsigned backlog = 64;
constexpr std::uint32_t slot_us = 500;

struct packet {
  const std::uint8_t* hdr;  // 16 bytes of Octopus header
  const std::uint8_t* body;
  std::uint32_t size;  // header + body
};

struct workload {
  std::vector<std::uint8_t> headers;
  std::vector<std::uint8_t> bodies;
  std::vector<packet> pkts;
};

workload make_workload() {
  workload w;
  w.headers.resize(n_packets * octopus::header_len);
  w.bodies.resize(body_arena + 2048, 0xA5);
  w.pkts.resize(n_packets);
  std::uint32_t rng = 12345;
  auto next = [&rng]() {
    rng = rng * 1664525U + 1013904223U;
    return rng >> 8;
  };
  std::uint32_t msg_id[4] = {1, 1, 1, 1};
  static const std::uint8_t svc[4] = {0, 2, 1, 2};  // three temporal layers (SEC'23 Fig. 7)
  std::size_t i = 0;
  std::size_t body_at = 0;
  unsigned stream = 0;
  while (i < n_packets) {
    const unsigned npk = 1 + next() % 6;
    const std::uint32_t mid = msg_id[stream]++;
    for (unsigned k = 0; k < npk && i < n_packets; ++k, ++i) {
      octopus::header h;
      h.stream_id = static_cast<std::uint16_t>(stream + 1);
      h.msg_id = mid;
      h.first = k == 0;
      h.last = k + 1 == npk;
      h.priority = svc[mid % 4];
      h.drop = true;
      h.priority_threshold = 7;     // scanned up to the priority, never matched: no drop
      h.bitrate_threshold_kbps = 100;  // far below any share: evaluated, never met
      octopus::encode_header(h, &w.headers[i * octopus::header_len]);
      const std::uint32_t body = 200 + next() % 1200;
      if (body_at + body > body_arena) {
        body_at = 0;
      }
      w.pkts[i] = packet{&w.headers[i * octopus::header_len], &w.bodies[body_at],
                         static_cast<std::uint32_t>(octopus::header_len) + body};
      body_at += body;
    }
    stream = (stream + 1) % 4;
  }
  return w;
}

struct entry {
  const packet* p;
  octopus::header h;  // the dropper's parsed metadata (unused by the FIFO)
  bool has_hdr;
};

// One run: FIFO ring, segmenting dequeue; with_dropper adds liboctopus, parse_only the header
// parse alone.
template <bool with_dropper, bool copy, bool parse_only = false>
double run(const workload& w, std::uint64_t& sent_bytes, std::uint64_t& drops) {
  std::vector<entry> ring(1024);
  const std::size_t mask = ring.size() - 1;
  std::size_t head = 0;
  std::size_t len = 0;
  std::uint64_t queued = 0;
  std::uint32_t head_sent = 0;
  std::vector<std::uint8_t> tb(64 * 1024);
  octopus::dropper d(slot_us);
  sent_bytes = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next = 0;
  std::int64_t now = 0;
  auto enqueue = [&](const packet& p) {
    entry& e = ring[(head + len) & mask];
    e.p = &p;
    if constexpr (parse_only || with_dropper) {
      e.has_hdr = octopus::parse_header(p.hdr, octopus::header_len, e.h) ==
                  octopus::parse_error::none;
    }
    if constexpr (with_dropper) {
      if (e.has_hdr) {
        d.on_enqueue(e.h, p.size, now);
      }
    }
    ++len;
    queued += p.size;
  };
  for (unsigned k = 0; k < backlog; ++k) {
    enqueue(w.pkts[next++]);
  }
  while (next + per_slot <= w.pkts.size()) {
    std::uint64_t budget = 0;
    for (unsigned k = 0; k < per_slot; ++k) {
      budget += w.pkts[next].size;
      enqueue(w.pkts[next++]);
    }
    std::uint64_t used = 0;
    while (budget > 0 && len > 0) {
      entry& e = ring[head];
      if constexpr (with_dropper) {
        if (head_sent == 0 && e.has_hdr && d.should_drop(e.h, e.p->size, now)) {
          queued -= e.p->size;
          head = (head + 1) & mask;
          --len;
          ++drops;
          continue;
        }
      }
      const std::uint32_t rem = e.p->size - head_sent;
      const auto take = static_cast<std::uint32_t>(std::min<std::uint64_t>(rem, budget));
      if constexpr (copy) {
        // header then body, as the SDU's bytes: into the transport block
        std::size_t at = used % (tb.size() - 2048);
        if (head_sent < octopus::header_len) {
          const std::uint32_t h = std::min<std::uint32_t>(
              static_cast<std::uint32_t>(octopus::header_len) - head_sent, take);
          std::memcpy(&tb[at], e.p->hdr + head_sent, h);
          std::memcpy(&tb[at + h], e.p->body, take - h);
        } else {
          std::memcpy(&tb[at], e.p->body + (head_sent - octopus::header_len), take);
        }
      }
      used += take;
      budget -= take;
      queued -= take;
      if (take == rem) {
        head_sent = 0;
        head = (head + 1) & mask;
        --len;
      } else {
        head_sent += take;
      }
    }
    if constexpr (with_dropper) {
      d.on_slot(used, queued > 0);
    }
    sent_bytes += used;
    now += slot_us;
  }
  const auto t1 = std::chrono::steady_clock::now();
  if constexpr (copy) {
    std::uint64_t x = 0;  // keep the copies observable
    for (std::size_t i = 0; i < tb.size(); i += 4096) {
      x += tb[i];
    }
    sent_bytes += x == 0xFFFFFFFFFFFFULL ? 1 : 0;
  }
  return std::chrono::duration<double, std::nano>(t1 - t0).count() /
         static_cast<double>(next);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 7;
  if (argc > 1) {
    repeats = std::max(1, std::atoi(argv[1]));
  }
  const workload w = make_workload();
  std::vector<double> fifo;
  std::vector<double> drop;
  std::vector<double> bare_fifo;
  std::vector<double> bare_drop;
  std::vector<double> parse;
  std::uint64_t drops = 0;
  std::uint64_t fifo_bytes = 0;
  std::uint64_t drop_bytes = 0;
  std::uint64_t scratch = 0;
  for (int r = 0; r < repeats; ++r) {  // interleaved: drift hits both sides alike
    fifo.push_back(run<false, true>(w, fifo_bytes, scratch));
    drop.push_back(run<true, true>(w, drop_bytes, drops));
    bare_fifo.push_back(run<false, false>(w, scratch, scratch));
    bare_drop.push_back(run<true, false>(w, scratch, drops));
    std::uint64_t parse_bytes = 0;
    parse.push_back(run<false, true, true>(w, parse_bytes, scratch));
    if (parse_bytes != fifo_bytes) {
      std::fprintf(stderr, "octopus_bench: the parse-only run sent other bytes\n");
      return 1;
    }
  }
  if (drops != 0 || fifo_bytes != drop_bytes) {
    std::fprintf(stderr, "octopus_bench: the schedules diverged (%" PRIu64 " drops)\n", drops);
    return 1;
  }
  const double f = median(fifo);
  const double d = median(drop);
  const double bf = median(bare_fifo);
  const double bd = median(bare_drop);
  const double po = median(parse);
  std::printf(
      "{\"dropper_ns_per_pkt\": %.2f, \"fifo_ns_per_pkt\": %.2f, \"ratio\": %.4f, "
      "\"mpps\": %.2f, \"bare_dropper_ns_per_pkt\": %.2f, \"bare_fifo_ns_per_pkt\": %.2f, "
      "\"bare_ratio\": %.4f, \"bare_mpps\": %.2f, \"parse_only_ns_per_pkt\": %.2f, "
      "\"parse_only_ratio\": %.4f, \"packets\": %zu, \"repeats\": %d, \"drops\": %" PRIu64
      "}\n",
      d, f, d / f, 1e3 / d, bd, bf, bd / bf, 1e3 / bd, po, po / f, n_packets, repeats, drops);
  return 0;
}
