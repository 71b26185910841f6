#include "octopus/dropper.h"

#include <algorithm>
#include <cmath>

namespace octopus {

namespace {

// Python's round(): ties to even, as the simulator computes its window sizes.
std::int64_t round_even(double x) { return static_cast<std::int64_t>(std::nearbyint(x)); }

// Water-filling over `v` sorted ascending by `before` (an insertion sort: a UE has a handful of
// streams): each item gets min(its demand, an equal share of what is left), the last takes the
// rest. emit(item, share) in that order; it returns true to stop early.
template <typename T, typename Before, typename Demand, typename Emit>
void water_fill(std::vector<T>& v, double total, Before before, Demand demand, Emit emit) {
  for (std::size_t i = 1; i < v.size(); ++i) {
    const T x = v[i];
    std::size_t j = i;
    for (; j > 0 && before(x, v[j - 1]); --j) {
      v[j] = v[j - 1];
    }
    v[j] = x;
  }
  double left = total;
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double share = left / static_cast<double>(n - i);
    const double give = std::min(demand(v[i]), share);
    if (emit(v[i], i < n - 1 ? give : share)) {
      return;
    }
    left -= give;
  }
}

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
      arrivals_(64),
      demand_k_(8.0 * 1e6 / static_cast<double>(window_us_)) {
  streams_.reserve(4);
}

dropper::stream_state& dropper::stream_slow(std::uint16_t id) {
  std::size_t i = 0;
  while (i < streams_.size() && streams_[i].id != id) {
    ++i;
  }
  if (i == streams_.size()) {
    streams_.push_back(stream_state{});
    streams_.back().id = id;
    ++gen_;  // a new stream has no share yet
  }
  if (i < 255) {
    index_[id & (index_size - 1)] = static_cast<std::uint8_t>(i + 1);
  }
  return streams_[i];
}

void dropper::grow_arrivals() {
  std::vector<arrival> bigger(arrivals_.size() * 2);
  for (std::size_t i = 0; i < arr_len_; ++i) {
    bigger[i] = arrivals_[(arr_head_ + i) & (arrivals_.size() - 1)];
  }
  arrivals_.swap(bigger);
  arr_head_ = 0;
}

void dropper::on_slot(std::uint64_t served_bytes, bool busy) {
  ++gen_;
  if (!busy) {
    dep_head_ = 0;
    dep_len_ = 0;
    departed_ = 0;
    bw_ = -1.0;
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
  bw_ = compute_served_bps();
}

void dropper::on_waiting_slots(std::uint64_t slots) {
  clock_ += static_cast<std::int64_t>(slots);  // as many on_slot(0, true): only time passes
  ++gen_;
}

double dropper::compute_served_bps() const {
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
  double out = total;
  water_fill(
      demands, total, [](const auto& a, const auto& b) { return a < b; },
      [](const auto& d) { return d.first; },
      [&](const auto& d, double share) {
        if (d.second != stream_id) {
          return false;
        }
        out = share;
        return true;
      });
  return out;
}

void dropper::refresh_shares(std::int64_t now_us) {
  const double bw = served_bps();
  if (bw >= 0) {
    expire(now_us);
    scratch_.clear();
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      const stream_state& s = streams_[i];
      if (s.window_count > 0) {
        scratch_.push_back(demand{static_cast<double>(s.window_bytes) * demand_k_, s.id,
                                  static_cast<std::uint32_t>(i)});
      }
    }
  }
  share_gen_ = gen_;  // after expire(): what it removed is part of this state
  share_now_ = now_us;
  for (stream_state& s : streams_) {
    s.share_bps = bw;  // unknown rate, a lone stream, or a stream with no demand: all of it
  }
  if (bw < 0 || scratch_.size() <= 1) {
    return;
  }
  // every stream's share in one pass: the same operations, in the same order, as
  // max_min_share computing one stream's, sorted by (demand, id)
  water_fill(
      scratch_, bw,
      [](const demand& a, const demand& b) {
        return a.bps < b.bps || (a.bps == b.bps && a.id < b.id);
      },
      [](const demand& d) { return d.bps; },
      [&](const demand& d, double share) {
        streams_[d.stream].share_bps = share;
        return false;
      });
}

double dropper::stream_share_bps(std::uint16_t stream_id, std::int64_t now_us) {
  fresh_shares(now_us);  // expires arrivals as a decision would, known stream or not
  for (const stream_state& s : streams_) {
    if (s.id == stream_id) {
      return s.share_bps;
    }
  }
  return served_bps();  // a stream never seen: no demand, all of the rate (or unknown)
}

}  // namespace octopus
