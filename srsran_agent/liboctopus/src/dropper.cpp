#include "octopus/dropper.h"

#include <algorithm>
#include <cmath>

namespace octopus {

namespace {

// Python's round(): ties to even, as the simulator computes its window sizes.
std::int64_t round_even(double x) { return static_cast<std::int64_t>(std::nearbyint(x)); }

}  // namespace

bool dropper_config::operator==(const dropper_config& o) const {
  return window_ms == o.window_ms && drop_by_msg == o.drop_by_msg &&
         drop_by_bitrate == o.drop_by_bitrate && levels == o.levels;
}

dropper::dropper(std::uint32_t slot_us, dropper_config cfg)
    : cfg_(cfg),
      slot_us_(slot_us == 0 ? 1 : slot_us),
      window_slots_(std::max<std::int64_t>(1, round_even(cfg.window_ms * 1000 / slot_us_))),
      window_us_(round_even(cfg.window_ms * 1000)),
      top_level_(std::min(std::max(cfg.levels, 1U), max_levels) - 1),
      // at most one departure per busy slot of the window (+ the newest), and min_departures
      deps_(std::max<std::size_t>(static_cast<std::size_t>(window_slots_) + 2, min_departures + 1)),
      arrivals_(64) {
  streams_.reserve(4);
}

dropper::stream_state* dropper::find_slow(std::uint16_t id) {
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].id == id) {
      last_stream_ = i;
      return &streams_[i];
    }
  }
  return nullptr;
}

dropper::stream_state& dropper::stream(std::uint16_t id) {
  if (stream_state* s = find(id)) {
    return *s;
  }
  streams_.push_back(stream_state{});
  streams_.back().id = id;
  last_stream_ = streams_.size() - 1;
  return streams_.back();
}

void dropper::expire(std::int64_t now_us) {
  const std::int64_t cutoff = now_us - window_us_;
  const std::size_t mask = arrivals_.size() - 1;
  while (arr_len_ > 0 && arrivals_[arr_head_].t_us < cutoff) {
    const arrival& a = arrivals_[arr_head_];
    stream_state& s = streams_[a.stream];
    s.window_bytes -= a.bytes;
    s.window_count -= a.packets;
    arr_head_ = (arr_head_ + 1) & mask;
    --arr_len_;
  }
}

void dropper::note_arrival(stream_state& s, std::uint32_t size, std::int64_t now_us) {
  expire(now_us);  // keeps the ring bounded; the same cutoff as a later read would apply
  s.window_bytes += size;
  s.window_count += 1;
  const auto sidx = static_cast<std::uint32_t>(&s - streams_.data());
  if (arr_len_ > 0) {
    // the same time and stream as the newest entry: one entry, the same expiry
    arrival& tail = arrivals_[(arr_head_ + arr_len_ - 1) & (arrivals_.size() - 1)];
    if (tail.t_us == now_us && tail.stream == sidx) {
      tail.bytes += size;
      tail.packets += 1;
      return;
    }
  }
  if (arr_len_ == arrivals_.size()) {
    std::vector<arrival> bigger(arrivals_.size() * 2);
    for (std::size_t i = 0; i < arr_len_; ++i) {
      bigger[i] = arrivals_[(arr_head_ + i) & (arrivals_.size() - 1)];
    }
    arrivals_.swap(bigger);
    arr_head_ = 0;
  }
  arrivals_[(arr_head_ + arr_len_) & (arrivals_.size() - 1)] = arrival{now_us, size, 1, sidx};
  ++arr_len_;
}

void dropper::on_enqueue(const header& h, std::uint32_t size, std::int64_t now_us) {
  stream_state& s = stream(h.stream_id);
  if (cfg_.drop_by_bitrate) {
    note_arrival(s, size, now_us);
  }
  if (h.drop && h.last && cfg_.drop_by_msg) {
    const unsigned idx = std::min<unsigned>(h.priority_threshold, top_level_);
    s.table[idx] = h.msg_id;
    s.table_valid = static_cast<std::uint8_t>(s.table_valid | (1U << idx));
  }
}

void dropper::on_slot(std::uint64_t served_bytes, bool busy) {
  if (!busy) {
    dep_head_ = 0;
    dep_len_ = 0;
    departed_ = 0;
    return;
  }
  ++clock_;
  if (served_bytes == 0) {
    return;  // waiting with data: the time counts, at the next departure
  }
  const std::size_t cap = deps_.size();
  std::size_t tail = dep_head_ + dep_len_;
  if (tail >= cap) {
    tail -= cap;
  }
  deps_[tail] = departure{clock_, served_bytes};
  ++dep_len_;
  departed_ += served_bytes;
  const std::int64_t oldest = clock_ - window_slots_;
  while (dep_len_ > min_departures && deps_[dep_head_].slot < oldest) {
    departed_ -= deps_[dep_head_].bytes;
    dep_head_ = dep_head_ + 1 == cap ? 0 : dep_head_ + 1;
    --dep_len_;
  }
}

void dropper::on_waiting_slots(std::uint64_t slots) {
  clock_ += static_cast<std::int64_t>(slots);  // as many on_slot(0, true): only time passes
}

double dropper::served_bps() const {
  if (dep_len_ < 2) {
    return -1.0;
  }
  const departure& first = deps_[dep_head_];
  std::size_t last = dep_head_ + dep_len_ - 1;
  if (last >= deps_.size()) {
    last -= deps_.size();
  }
  // the simulator's arithmetic, in the same order: bytes * 8.0 * 1e6 / (slots * slot)
  return static_cast<double>(departed_ - first.bytes) * 8.0 * 1e6 /
         static_cast<double>((deps_[last].slot - first.slot) * slot_us_);
}

double max_min_share(double total, std::vector<std::pair<double, std::uint16_t>>& demands,
                     std::uint16_t stream_id) {
  // insertion sort: a UE has a handful of streams
  for (std::size_t i = 1; i < demands.size(); ++i) {
    const auto v = demands[i];
    std::size_t j = i;
    for (; j > 0 && v < demands[j - 1]; --j) {
      demands[j] = demands[j - 1];
    }
    demands[j] = v;
  }
  double left = total;
  const std::size_t n = demands.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double share = left / static_cast<double>(n - i);
    const double give = std::min(demands[i].first, share);
    if (demands[i].second == stream_id) {
      return i < n - 1 ? give : share;
    }
    left -= give;
  }
  return total;
}

double dropper::stream_share_bps(std::uint16_t stream_id, std::int64_t now_us) {
  const double bw = served_bps();
  if (bw < 0) {
    return bw;
  }
  expire(now_us);
  scratch_.clear();
  const double k = 8.0 * 1e6 / static_cast<double>(window_us_);
  for (const stream_state& s : streams_) {
    if (s.window_count > 0) {
      scratch_.emplace_back(static_cast<double>(s.window_bytes) * k, s.id);
    }
  }
  if (scratch_.size() <= 1) {
    return bw;
  }
  return max_min_share(bw, scratch_, stream_id);
}

bool dropper::should_drop(const header& h, std::uint32_t size, std::int64_t now_us,
                          drop_decision* out) {
  stream_state& s = stream(h.stream_id);
  if (h.first) {
    ++stats_.decisions;
    bool drop = false;
    bool by_bitrate = false;
    if (cfg_.drop_by_msg && s.table_valid != 0) {
      const unsigned top = std::min<unsigned>(h.priority, top_level_);
      for (unsigned thr = 0; thr <= top; ++thr) {
        if ((s.table_valid & (1U << thr)) != 0 && serial_lt(h.msg_id, s.table[thr])) {
          drop = true;
          break;
        }
      }
    }
    double bw = -1.0;
    if (!drop && cfg_.drop_by_bitrate && h.bitrate_threshold_kbps > 0) {
      bw = stream_share_bps(h.stream_id, now_us);
      if (bw >= 0 && static_cast<double>(h.bitrate_threshold_kbps) * 1000.0 > bw) {
        drop = by_bitrate = true;
      }
    }
    if (out != nullptr) {
      out->evaluated = true;
      out->cause = drop ? (by_bitrate ? drop_cause::by_bitrate : drop_cause::by_message)
                        : drop_cause::kept;
      out->share_bps = bw;
    }
    if (drop) {
      // the stream pointer may have moved if stream_share_bps added nothing; it never adds
      s.in_drop = true;
      s.in_drop_msg = h.msg_id;
      if (by_bitrate) {
        ++stats_.dropped_msgs_by_bitrate;
      } else {
        ++stats_.dropped_msgs_by_msg;
      }
    }
  } else if (out != nullptr) {
    out->evaluated = false;
  }
  if (s.in_drop && s.in_drop_msg == h.msg_id) {
    ++stats_.dropped_packets;
    stats_.dropped_bytes += size;
    return true;
  }
  return false;
}

}  // namespace octopus
