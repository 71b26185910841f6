// Replays a dropper trace (one operation per line, written by the simulator's recorder,
// tests/liboctopus) through liboctopus and prints every head-of-queue decision, so the two
// implementations can be compared decision for decision.
//
//   C slot_us window_ms drop_by_msg drop_by_bitrate levels               (first line)
//   E t_us stream msg flags priority threshold kbps size                  enqueue
//   H t_us stream msg flags priority threshold kbps size                  head: decide
//   S served_bytes busy                                                   slot
// Output, one line per H: t_us stream msg dropped cause share_bps  (cause/share "-" unless F)
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "octopus/dropper.h"

namespace {

octopus::header read_header(const unsigned long long* v) {
  octopus::header h;
  h.stream_id = static_cast<std::uint16_t>(v[1]);
  h.msg_id = static_cast<std::uint32_t>(v[2]);
  const auto flags = static_cast<std::uint8_t>(v[3]);
  h.first = (flags & octopus::flag_first) != 0;
  h.last = (flags & octopus::flag_last) != 0;
  h.drop = (flags & octopus::flag_drop) != 0;
  h.priority = static_cast<std::uint8_t>(v[4]);
  h.priority_threshold = static_cast<std::uint8_t>(v[5]);
  h.bitrate_threshold_kbps = static_cast<std::uint32_t>(v[6]);
  return h;
}

}  // namespace

int main() {
  char line[512];
  std::unique_ptr<octopus::dropper> d;
  unsigned long lineno = 0;
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    ++lineno;
    const char op = line[0];
    if (op == '\n' || op == '#') {
      continue;
    }
    if (op == 'C') {
      unsigned slot = 0;
      double window = 0;
      int by_msg = 0;
      int by_rate = 0;
      unsigned levels = 0;
      if (std::sscanf(line + 1, "%u %lf %d %d %u", &slot, &window, &by_msg, &by_rate, &levels) !=
          5) {
        std::fprintf(stderr, "octopus_replay: line %lu: bad config line\n", lineno);
        return 2;
      }
      octopus::dropper_config cfg;
      cfg.window_ms = window;
      cfg.drop_by_msg = by_msg != 0;
      cfg.drop_by_bitrate = by_rate != 0;
      cfg.levels = levels;
      d = std::make_unique<octopus::dropper>(slot, cfg);
      continue;
    }
    if (!d) {
      std::fprintf(stderr, "octopus_replay: line %lu: operation before the C line\n", lineno);
      return 2;
    }
    if (op == 'S') {
      unsigned long long served = 0;
      int busy = 0;
      if (std::sscanf(line + 1, "%llu %d", &served, &busy) != 2) {
        std::fprintf(stderr, "octopus_replay: line %lu: bad slot line\n", lineno);
        return 2;
      }
      d->on_slot(served, busy != 0);
      continue;
    }
    if (op != 'E' && op != 'H') {
      std::fprintf(stderr, "octopus_replay: line %lu: unknown operation '%c'\n", lineno, op);
      return 2;
    }
    unsigned long long v[8] = {};
    long long t = 0;
    if (std::sscanf(line + 1, "%lld %llu %llu %llu %llu %llu %llu %llu", &t, &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) != 8) {
      std::fprintf(stderr, "octopus_replay: line %lu: bad packet line\n", lineno);
      return 2;
    }
    const octopus::header h = read_header(v);
    const auto size = static_cast<std::uint32_t>(v[7]);
    if (op == 'E') {
      d->on_enqueue(h, size, t);
      continue;
    }
    octopus::drop_decision dec;
    const bool dropped = d->should_drop(h, size, t, &dec);
    if (dec.evaluated && dec.cause == octopus::drop_cause::kept && dec.share_bps < 0 &&
        d->config().drop_by_bitrate && h.bitrate_threshold_kbps > 0) {
      dec.share_bps = d->stream_share_bps(h.stream_id, t);  // kept on the guaranteed share
    }
    if (dec.evaluated) {
      std::printf("%lld %u %u %d %d %.17g\n", t, h.stream_id, h.msg_id, dropped ? 1 : 0,
                  static_cast<int>(dec.cause), dec.share_bps);
    } else {
      std::printf("%lld %u %u %d - -\n", t, h.stream_id, h.msg_id, dropped ? 1 : 0);
    }
  }
  return 0;
}
