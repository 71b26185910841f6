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
  double share_bps = -1.0;  // the stream's fair share, -1 when not computed or unknown
};

// The served rate spans at least this many departures, however long ago within the busy period.
constexpr std::size_t min_departures = 5;

class dropper {
 public:
  // slot_us: the duration of one transmission opportunity (1000 us at 15 kHz SCS, 500 at 30).
  explicit dropper(std::uint32_t slot_us, dropper_config cfg = {});

  void on_enqueue(const header& h, std::uint32_t size, std::int64_t now_us);
  bool should_drop(const header& h, std::uint32_t size, std::int64_t now_us,
                   drop_decision* out = nullptr);
  void on_slot(std::uint64_t served_bytes, bool busy);
  void on_waiting_slots(std::uint64_t slots);

  // The queue's served rate in its busy period in bit/s; < 0 while unknown.
  double served_bps() const;
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
  };
  struct arrival {
    std::int64_t t_us;
    std::uint32_t bytes;
    std::uint32_t packets;
    std::uint32_t stream;  // index into streams_
  };

  stream_state& stream(std::uint16_t id);
  stream_state* find(std::uint16_t id) {
    if (last_stream_ < streams_.size() && streams_[last_stream_].id == id) {
      return &streams_[last_stream_];
    }
    return find_slow(id);
  }
  stream_state* find_slow(std::uint16_t id);
  void expire(std::int64_t now_us);
  void note_arrival(stream_state& s, std::uint32_t size, std::int64_t now_us);

  dropper_config cfg_;
  std::uint32_t slot_us_;
  std::int64_t window_slots_;
  std::int64_t window_us_;
  unsigned top_level_;

  std::vector<stream_state> streams_;
  std::size_t last_stream_ = 0;

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

  // ring of arrivals in the demand window (power-of-two capacity)
  std::vector<arrival> arrivals_;
  std::size_t arr_head_ = 0;
  std::size_t arr_len_ = 0;

  std::vector<std::pair<double, std::uint16_t>> scratch_;  // (demand bit/s, stream id)
  dropper_stats stats_;
};

// Water-filling over demands sorted ascending by (demand, stream id): each stream gets
// min(demand, an equal share of what is left), the largest takes the rest. Returns the share of
// `stream_id`, or `total` when it has no demand. `demands` is sorted in place.
double max_min_share(double total, std::vector<std::pair<double, std::uint16_t>>& demands,
                     std::uint16_t stream_id);

}  // namespace octopus
