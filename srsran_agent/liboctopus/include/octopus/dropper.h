// SEC'23 Algorithm 1 for one UE's downlink queue: drop whole application messages by priority
// (drop-by-message) and by bitrate threshold against the stream's max-min fair share of the
// queue's served rate (drop-by-bitrate). The same algorithm as the simulator's sim/dropper.py,
// decision for decision (tests/liboctopus checks it on a recorded trace).
//
// A queue discipline calls it from three places:
//   on_enqueue(h, size, now)   every packet that enters the queue with a valid header
//   should_drop(h, size, now)  the packet at the head, before any of its bytes are sent
//   on_slot(served, busy)      once per slot in which the queue held data or was served; busy:
//                              it holds data at the slot's end (False ends the busy period)
//   on_waiting_slots(n)        n slots with data queued and no opportunity: n x on_slot(0, true)
// The served rate is the dequeue rate within the current busy period, between departures, over
// the last window_ms but at least min_departures departures (SEC'23 §5, measured as the
// authors' reference queue does); unknown (no bitrate drops) with fewer than two departures.
// It keeps no packets itself and allocates only when a new stream appears or the arrival window
// grows past its high-water mark.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "octopus/header.h"

namespace octopus {

struct dropper_config {
  double window_ms = 50.0;  // served-rate window (busy slots) and demand window (time)
  bool drop_by_msg = true;
  bool drop_by_bitrate = true;
  unsigned levels = max_levels;  // priority levels honoured (1..8); higher ones count as the last

  bool operator==(const dropper_config& o) const;
  bool operator!=(const dropper_config& o) const { return !(*this == o); }
};

struct dropper_stats {
  std::uint64_t dropped_packets = 0;
  std::uint64_t dropped_bytes = 0;
  std::uint64_t dropped_msgs_by_msg = 0;
  std::uint64_t dropped_msgs_by_bitrate = 0;
  std::uint64_t decisions = 0;  // messages whose first packet reached the head
};

enum class drop_cause : std::uint8_t { kept = 0, by_message = 1, by_bitrate = 2 };

// What should_drop decided for a message's first packet (valid when `evaluated`).
struct drop_decision {
  bool evaluated = false;
  drop_cause cause = drop_cause::kept;
  // The stream's fair share; -1 when unknown or not computed: a message is kept without it when
  // its threshold is clearly below the share the stream is guaranteed (below), and
  // stream_share_bps() gives it on demand.
  double share_bps = -1.0;
};

// The served rate spans at least this many departures, however long ago within the busy period.
constexpr std::size_t min_departures = 5;

class dropper {
 public:
  // slot_us: the duration of one transmission opportunity (1000 us at 15 kHz SCS, 500 at 30).
  explicit dropper(std::uint32_t slot_us, dropper_config cfg = {});

  // The per-packet calls are inline (below the class): a gNB makes them for every packet.
  void on_enqueue(const header& h, std::uint32_t size, std::int64_t now_us);
  bool should_drop(const header& h, std::uint32_t size, std::int64_t now_us,
                   drop_decision* out = nullptr);
  void on_slot(std::uint64_t served_bytes, bool busy);
  void on_waiting_slots(std::uint64_t slots);

  // The queue's served rate in its busy period in bit/s; < 0 while unknown.
  double served_bps() const { return bw_; }
  // The stream's max-min fair share of the served rate; < 0 while unknown.
  double stream_share_bps(std::uint16_t stream_id, std::int64_t now_us);

  const dropper_config& config() const { return cfg_; }
  const dropper_stats& stats() const { return stats_; }
  std::size_t streams() const { return streams_.size(); }

 private:
  struct stream_state {
    std::uint16_t id = 0;
    std::uint8_t table_valid = 0;  // bit i: table[i] holds a dropper message id
    bool in_drop = false;
    std::uint32_t in_drop_msg = 0;
    std::uint32_t table[max_levels] = {};
    std::uint64_t window_bytes = 0;  // arrivals within the window
    std::uint32_t window_count = 0;
    double share_bps = -1.0;  // fair share as of the last refresh_shares()
  };
  struct arrival {
    std::int64_t t_us;
    std::uint32_t bytes;
    std::uint32_t packets;
    std::uint32_t stream;  // index into streams_
  };
  struct demand {
    double bps;
    std::uint16_t id;
    std::uint32_t stream;  // index into streams_
  };

  // Streams are found through a 64-entry index by the id's low bits (the newest stream seen
  // with those bits wins), and by a scan of streams_ when the index misses.
  static constexpr std::size_t index_size = 64;
  stream_state& stream(std::uint16_t id) {
    const unsigned i = index_[id & (index_size - 1)];
    if (i != 0 && streams_[i - 1].id == id) {
      return streams_[i - 1];
    }
    return stream_slow(id);
  }
  stream_state& stream_slow(std::uint16_t id);
  void expire(std::int64_t now_us);
  void note_arrival(stream_state& s, std::uint32_t size, std::int64_t now_us);
  void grow_arrivals();
  double compute_served_bps() const;
  // Every stream's fair share at now_us into stream_state::share_bps. Shares change only when
  // an event below bumps gen_ or time moves, so the messages that reach the head between two
  // events share one computation (the same arithmetic as computing each one alone).
  void refresh_shares(std::int64_t now_us);
  void fresh_shares(std::int64_t now_us) {
    if (share_gen_ != gen_ || share_now_ != now_us) {
      refresh_shares(now_us);
    }
  }
  double share_of(stream_state& s, std::int64_t now_us) {
    fresh_shares(now_us);
    return s.share_bps;
  }

  dropper_config cfg_;
  std::uint32_t slot_us_;
  std::int64_t window_slots_;
  std::int64_t window_us_;
  unsigned top_level_;

  std::vector<stream_state> streams_;
  std::uint8_t index_[index_size] = {};  // id's low bits -> streams_ index + 1 (0: none)

  // departures of the current busy period within the window: (busy slot, bytes) in a ring
  struct departure {
    std::int64_t slot;
    std::uint64_t bytes;
  };
  std::int64_t clock_ = 0;  // busy slots so far
  std::vector<departure> deps_;
  std::size_t dep_head_ = 0;
  std::size_t dep_len_ = 0;
  std::uint64_t departed_ = 0;
  double bw_ = -1.0;  // served_bps(), recomputed when the departures change

  // ring of arrivals in the demand window (power-of-two capacity)
  std::vector<arrival> arrivals_;
  std::size_t arr_head_ = 0;
  std::size_t arr_len_ = 0;
  std::size_t demanding_ = 0;  // streams with arrivals in the window
  double demand_k_;            // window bytes -> demand in bit/s

  // bumped by every change to arrivals (and their expiry), departures or streams; shares are
  // cached at (gen, now)
  std::uint64_t gen_ = 1;
  std::uint64_t share_gen_ = 0;
  std::int64_t share_now_ = 0;
  std::vector<demand> scratch_;
  dropper_stats stats_;
};

inline void dropper::expire(std::int64_t now_us) {
  const std::int64_t cutoff = now_us - window_us_;
  const std::size_t mask = arrivals_.size() - 1;
  while (arr_len_ > 0 && arrivals_[arr_head_].t_us < cutoff) {
    const arrival& a = arrivals_[arr_head_];
    stream_state& s = streams_[a.stream];
    s.window_bytes -= a.bytes;
    s.window_count -= a.packets;
    demanding_ -= s.window_count == 0 ? 1 : 0;
    arr_head_ = (arr_head_ + 1) & mask;
    --arr_len_;
    ++gen_;  // cached shares are stale even if time were to go back
  }
}

inline void dropper::note_arrival(stream_state& s, std::uint32_t size, std::int64_t now_us) {
  expire(now_us);  // keeps the ring bounded; the same cutoff as a later read would apply
  s.window_bytes += size;
  demanding_ += s.window_count == 0 ? 1 : 0;
  s.window_count += 1;
  const auto sidx = static_cast<std::uint32_t>(&s - streams_.data());
  const std::size_t mask = arrivals_.size() - 1;
  if (arr_len_ > 0) {
    // the same time and stream as the newest entry: one entry, the same expiry
    arrival& tail = arrivals_[(arr_head_ + arr_len_ - 1) & mask];
    if (tail.t_us == now_us && tail.stream == sidx) {
      tail.bytes += size;
      tail.packets += 1;
      return;
    }
  }
  if (arr_len_ == arrivals_.size()) {
    grow_arrivals();
  }
  arrivals_[(arr_head_ + arr_len_) & (arrivals_.size() - 1)] = arrival{now_us, size, 1, sidx};
  ++arr_len_;
}

inline void dropper::on_enqueue(const header& h, std::uint32_t size, std::int64_t now_us) {
  stream_state& s = stream(h.stream_id);
  if (cfg_.drop_by_bitrate) {
    note_arrival(s, size, now_us);
    ++gen_;
  }
  if (h.drop && h.last && cfg_.drop_by_msg) {
    const unsigned idx = h.priority_threshold < top_level_ ? h.priority_threshold : top_level_;
    s.table[idx] = h.msg_id;
    s.table_valid = static_cast<std::uint8_t>(s.table_valid | (1U << idx));
  }
}

inline bool dropper::should_drop(const header& h, std::uint32_t size, std::int64_t now_us,
                                 drop_decision* out) {
  stream_state& s = stream(h.stream_id);
  if (h.first) {
    ++stats_.decisions;
    bool drop = false;
    bool by_bitrate = false;
    if (cfg_.drop_by_msg && s.table_valid != 0) {
      // a table entry at a threshold <= this message's priority that is newer than it
      const unsigned top = h.priority < top_level_ ? h.priority : top_level_;
      const unsigned upto = s.table_valid & ((2U << top) - 1);
      for (unsigned thr = 0; (upto >> thr) != 0; ++thr) {
        if (((upto >> thr) & 1U) != 0 && serial_lt(h.msg_id, s.table[thr])) {
          drop = true;
          break;
        }
      }
    }
    double bw = -1.0;
    if (!drop && cfg_.drop_by_bitrate && h.bitrate_threshold_kbps > 0 && bw_ >= 0) {
      const double need = static_cast<double>(h.bitrate_threshold_kbps) * 1000.0;
      expire(now_us);
      if (s.window_count == 0 || demanding_ <= 1) {
        bw = bw_;  // no other stream asks for any: the whole rate (exactly)
      } else {
        // Max-min fairness guarantees a stream min(its demand, rate / streams asking); a
        // threshold clearly below that is kept without sorting the demands. The margin covers
        // the water-filling's rounding (a few ulps), so no decision differs from the full one.
        // (need * streams rounds far inside the margin: no division on this path.)
        constexpr double margin = 1.0 - 1e-9;
        const double asks = static_cast<double>(s.window_bytes) * demand_k_;
        if (need >= asks * margin || need * static_cast<double>(demanding_) >= bw_ * margin) {
          bw = share_of(s, now_us);
        }
      }
      if (bw >= 0 && need > bw) {
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

// Water-filling over demands sorted ascending by (demand, stream id): each stream gets
// min(demand, an equal share of what is left), the largest takes the rest. Returns the share of
// `stream_id`, or `total` when it has no demand. `demands` is sorted in place.
double max_min_share(double total, std::vector<std::pair<double, std::uint16_t>>& demands,
                     std::uint16_t stream_id);

}  // namespace octopus
