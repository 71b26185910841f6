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
         drop_by_bitrate == o.drop_by_bitrate && min_busy_ms == o.min_busy_ms &&
         levels == o.levels;
}

dropper::dropper(std::uint32_t slot_us, dropper_config cfg)
    : cfg_(cfg),
      slot_us_(slot_us == 0 ? 1 : slot_us),
      window_slots_(static_cast<std::size_t>(
          std::max<std::int64_t>(1, round_even(cfg.window_ms * 1000 / slot_us_)))),
      min_busy_slots_(static_cast<std::size_t>(
          std::max<std::int64_t>(1, round_even(cfg.min_busy_ms * 1000 / slot_us_)))),
      window_us_(round_even(cfg.window_ms * 1000)),
      top_level_(std::min(std::max(cfg.levels, 1U), max_levels) - 1),
      busy_(window_slots_ + 1, 0),
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
    return;
  }
  const std::size_t cap = busy_.size();
  std::size_t tail = busy_head_ + busy_len_;
  if (tail >= cap) {
    tail -= cap;
  }
  busy_[tail] = served_bytes;
  busy_sum_ += served_bytes;
  if (++busy_len_ > window_slots_) {
    busy_sum_ -= busy_[busy_head_];
    busy_head_ = busy_head_ + 1 == cap ? 0 : busy_head_ + 1;
    --busy_len_;
  }
}

double dropper::served_bps() const {
  if (busy_len_ < min_busy_slots_) {
    return -1.0;
  }
  // the simulator's arithmetic, in the same order: bytes * 8.0 * 1e6 / (n * slot)
  return static_cast<double>(busy_sum_) * 8.0 * 1e6 /
         static_cast<double>(static_cast<std::uint64_t>(busy_len_) * slot_us_);
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
