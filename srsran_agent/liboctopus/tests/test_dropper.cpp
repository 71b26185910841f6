// Algorithm 1's defining behaviours (SEC'23 §4): drop-by-message, drop-by-bitrate with the
// max-min fair share of the served rate, and no half messages.
#include <gtest/gtest.h>

#include <vector>

#include "octopus/dropper.h"

namespace {

using octopus::drop_cause;
using octopus::drop_decision;
using octopus::dropper;
using octopus::dropper_config;
using octopus::header;

header pkt(std::uint16_t sid, std::uint32_t mid, bool first, bool last, std::uint8_t prio = 0,
           bool drop = false, std::uint8_t thr = 0, std::uint32_t kbps = 0) {
  header h;
  h.stream_id = sid;
  h.msg_id = mid;
  h.first = first;
  h.last = last;
  h.priority = prio;
  h.drop = drop;
  h.priority_threshold = thr;
  h.bitrate_threshold_kbps = kbps;
  return h;
}

TEST(Dropper, NewerDropperAtOrBelowThePriorityDropsTheOlderMessage) {
  dropper d(1000);
  // frame 1 (priority 2) waits; frame 2 arrives as a dropper message at threshold 1
  d.on_enqueue(pkt(1, 1, true, true, 2), 1200, 0);
  d.on_enqueue(pkt(1, 2, true, true, 0, true, 1), 1200, 10);
  drop_decision dec;
  EXPECT_TRUE(d.should_drop(pkt(1, 1, true, true, 2), 1200, 20, &dec));
  EXPECT_TRUE(dec.evaluated);
  EXPECT_EQ(dec.cause, drop_cause::by_message);
  EXPECT_FALSE(d.should_drop(pkt(1, 2, true, true, 0, true, 1), 1200, 20));  // itself is newest
  EXPECT_EQ(d.stats().dropped_msgs_by_msg, 1U);
  EXPECT_EQ(d.stats().dropped_bytes, 1200U);
}

TEST(Dropper, MoreImportantMessagesSurviveAHigherThreshold) {
  dropper d(1000);
  d.on_enqueue(pkt(1, 1, true, true, 0), 100, 0);  // an I-frame, priority 0
  d.on_enqueue(pkt(1, 2, true, true, 1), 100, 0);  // priority 1
  d.on_enqueue(pkt(1, 3, true, true, 2, true, 2), 100, 0);  // dropper at threshold 2
  EXPECT_FALSE(d.should_drop(pkt(1, 1, true, true, 0), 100, 1));
  EXPECT_FALSE(d.should_drop(pkt(1, 2, true, true, 1), 100, 1));
  d.on_enqueue(pkt(1, 4, true, true, 1), 100, 2);
  d.on_enqueue(pkt(1, 5, true, true, 3), 100, 2);
  d.on_enqueue(pkt(1, 6, true, true, 3, true, 3), 100, 2);
  EXPECT_FALSE(d.should_drop(pkt(1, 4, true, true, 1), 100, 3));
  EXPECT_TRUE(d.should_drop(pkt(1, 5, true, true, 3), 100, 3));  // newer dropper at thr 2 and 3
}

TEST(Dropper, ADroppedMessageLosesEveryPacketAndOnlyThose) {
  dropper d(1000);
  d.on_enqueue(pkt(1, 10, true, false, 1), 1000, 0);
  d.on_enqueue(pkt(1, 10, false, false, 1), 1000, 0);
  d.on_enqueue(pkt(1, 10, false, true, 1), 1000, 0);
  d.on_enqueue(pkt(1, 11, true, true, 0, true, 0), 500, 1);
  EXPECT_TRUE(d.should_drop(pkt(1, 10, true, false, 1), 1000, 2));
  EXPECT_TRUE(d.should_drop(pkt(1, 10, false, false, 1), 1000, 2));
  EXPECT_TRUE(d.should_drop(pkt(1, 10, false, true, 1), 1000, 2));
  EXPECT_FALSE(d.should_drop(pkt(1, 11, true, true, 0, true, 0), 500, 2));
  EXPECT_EQ(d.stats().dropped_packets, 3U);
  EXPECT_EQ(d.stats().dropped_msgs_by_msg, 1U);
}

TEST(Dropper, AMessageInTransmissionIsNeverDropped) {
  dropper d(1000);
  d.on_enqueue(pkt(1, 1, true, false, 3), 1000, 0);
  d.on_enqueue(pkt(1, 1, false, true, 3), 1000, 0);
  EXPECT_FALSE(d.should_drop(pkt(1, 1, true, false, 3), 1000, 1));  // head sent
  d.on_enqueue(pkt(1, 2, true, true, 0, true, 0), 100, 2);             // newer dropper arrives
  EXPECT_FALSE(d.should_drop(pkt(1, 1, false, true, 3), 1000, 3));   // the tail still goes
}

TEST(Dropper, StreamsAreIndependent) {
  dropper d(1000);
  d.on_enqueue(pkt(1, 1, true, true, 1), 100, 0);
  d.on_enqueue(pkt(2, 9, true, true, 0, true, 0), 100, 0);
  EXPECT_FALSE(d.should_drop(pkt(1, 1, true, true, 1), 100, 1));
}

TEST(Dropper, MessageIdsWrap) {
  dropper d(1000);
  d.on_enqueue(pkt(1, 0xFFFFFFFFU, true, true, 1), 100, 0);
  d.on_enqueue(pkt(1, 0, true, true, 0, true, 0), 100, 0);
  EXPECT_TRUE(d.should_drop(pkt(1, 0xFFFFFFFFU, true, true, 1), 100, 1));
}

TEST(Dropper, DropByMessageCanBeSwitchedOff) {
  dropper_config cfg;
  cfg.drop_by_msg = false;
  dropper d(1000, cfg);
  d.on_enqueue(pkt(1, 1, true, true, 2), 100, 0);
  d.on_enqueue(pkt(1, 2, true, true, 0, true, 0), 100, 0);
  EXPECT_FALSE(d.should_drop(pkt(1, 1, true, true, 2), 100, 1));
}

TEST(Dropper, LevelsAboveTheHonouredOnesCountAsTheLast) {
  dropper_config cfg;
  cfg.levels = 2;  // priorities 0 and 1; 2..7 act as 1
  dropper d(1000, cfg);
  d.on_enqueue(pkt(1, 1, true, true, 1), 100, 0);
  d.on_enqueue(pkt(1, 2, true, true, 0, true, 5), 100, 0);  // threshold 5 acts as 1
  EXPECT_TRUE(d.should_drop(pkt(1, 1, true, true, 1), 100, 1));
}

// Serve `bytes` per 1 ms slot for `slots` slots.
void serve(dropper& d, std::uint64_t bytes, int slots) {
  for (int i = 0; i < slots; ++i) {
    d.on_slot(bytes, true);
  }
}

TEST(Dropper, ServedRateIsTheRateBetweenDeparturesOfTheBusyPeriod) {
  dropper d(1000);
  EXPECT_LT(d.served_bps(), 0);  // unknown
  serve(d, 1250, 1);
  EXPECT_LT(d.served_bps(), 0);  // one departure is no rate
  serve(d, 0, 3);                // waiting with data: the time counts
  serve(d, 1250, 1);
  EXPECT_DOUBLE_EQ(d.served_bps(), 1250 * 8.0 * 1e6 / 4000);  // 1250 B after the first, in 4 ms
  serve(d, 1250, 5);
  d.on_slot(100, false);  // the slot ended with the queue empty: the busy period is over
  EXPECT_LT(d.served_bps(), 0);
  serve(d, 2500, 60);  // the window keeps the departures of the last 50 busy slots
  EXPECT_DOUBLE_EQ(d.served_bps(), 20e6);
}

TEST(Dropper, WaitingSlotsAreSlotsWithDataAndNothingServed) {
  dropper a(1000);
  dropper b(1000);
  for (int i = 0; i < 8; ++i) {
    serve(a, 0, 37);
    a.on_slot(900, true);
    b.on_waiting_slots(37);
    b.on_slot(900, true);
  }
  EXPECT_GT(a.served_bps(), 0);
  EXPECT_DOUBLE_EQ(a.served_bps(), b.served_bps());
}

TEST(Dropper, ServedRateSpansAtLeastFiveDepartures) {
  dropper d(1000);
  for (int i = 0; i < 10; ++i) {  // one 1500 B departure every 40 ms
    serve(d, 0, 39);
    serve(d, 1500, 1);
  }
  EXPECT_DOUBLE_EQ(d.served_bps(), 4 * 1500 * 8.0 * 1e6 / 160000);  // the last 5, 160 ms apart
}

TEST(Dropper, BitrateThresholdAboveTheServedRateDrops) {
  dropper d(1000);
  serve(d, 1250, 50);  // 10 Mbit/s
  d.on_enqueue(pkt(1, 1, true, true, 0, false, 0, 12000), 1000, 0);
  d.on_enqueue(pkt(1, 2, true, true, 0, false, 0, 8000), 1000, 0);
  drop_decision dec;
  EXPECT_TRUE(d.should_drop(pkt(1, 1, true, true, 0, false, 0, 12000), 1000, 1, &dec));
  EXPECT_EQ(dec.cause, drop_cause::by_bitrate);
  EXPECT_DOUBLE_EQ(dec.share_bps, 10e6);
  EXPECT_FALSE(d.should_drop(pkt(1, 2, true, true, 0, false, 0, 8000), 1000, 1));
  EXPECT_EQ(d.stats().dropped_msgs_by_bitrate, 1U);
}

TEST(Dropper, NoBitrateDropsWhileTheRateIsUnknown) {
  dropper d(1000);
  serve(d, 10, 2);
  d.on_slot(10, false);  // drained: no busy period, no rate
  d.on_enqueue(pkt(1, 1, true, true, 0, false, 0, 100000), 1000, 0);
  EXPECT_FALSE(d.should_drop(pkt(1, 1, true, true, 0, false, 0, 100000), 1000, 1));
}

TEST(Dropper, TwoStreamsGetTheirMaxMinFairShares) {
  dropper d(1000);
  serve(d, 1250, 50);  // 10 Mbit/s served
  // in the last 50 ms stream 1 brought 2 Mbit/s, stream 2 brought 12 Mbit/s
  for (int t = 0; t < 50; ++t) {
    d.on_enqueue(pkt(1, static_cast<std::uint32_t>(t), true, true), 250, t * 1000);
    d.on_enqueue(pkt(2, static_cast<std::uint32_t>(t), true, true), 1500, t * 1000);
  }
  EXPECT_DOUBLE_EQ(d.stream_share_bps(1, 49000), 2e6);  // below its fair half: all it asks
  EXPECT_DOUBLE_EQ(d.stream_share_bps(2, 49000), 8e6);  // the rest
  EXPECT_DOUBLE_EQ(d.stream_share_bps(3, 49000), 10e6);  // no demand: the whole rate
  // after the window passes, old arrivals no longer count
  EXPECT_DOUBLE_EQ(d.stream_share_bps(2, 49000 + 50001), 10e6);
}

// A threshold below the stream's guaranteed share (min(demand, rate / streams asking)) is kept
// without computing the share; at and around the share itself the full computation decides.
TEST(Dropper, ThresholdsAroundTheFairShareDecideAsTheFullComputation) {
  for (const std::uint32_t kbps : {3000U, 3333U, 3334U, 3999U, 4000U, 4001U, 9000U}) {
    dropper d(1000);
    serve(d, 1250, 50);  // 10 Mbit/s served
    // stream 1 asks 2 Mbit/s, streams 2 and 3 ask 12 each: shares 2, 4 and 4 Mbit/s
    for (int t = 0; t < 50; ++t) {
      d.on_enqueue(pkt(1, static_cast<std::uint32_t>(t), true, true), 250, t * 1000);
      d.on_enqueue(pkt(2, static_cast<std::uint32_t>(t), true, true), 1500, t * 1000);
      d.on_enqueue(pkt(3, static_cast<std::uint32_t>(t), true, true), 1500, t * 1000);
    }
    const header h = pkt(2, 1000, true, true, 0, false, 0, kbps);
    d.on_enqueue(h, 100, 49000);
    drop_decision dec;
    const bool dropped = d.should_drop(h, 100, 49000, &dec);
    EXPECT_EQ(dropped, kbps > 4000) << kbps;
    EXPECT_EQ(dec.cause, kbps > 4000 ? drop_cause::by_bitrate : drop_cause::kept) << kbps;
    if (kbps * 1000.0 < 10e6 / 3) {
      EXPECT_LT(dec.share_bps, 0) << kbps;  // kept on the bound: the share was not computed
    } else {
      EXPECT_NEAR(dec.share_bps, 4e6, 1e-3) << kbps;
    }
    EXPECT_NEAR(d.stream_share_bps(2, 49000), 4e6, 1e-3) << kbps;
  }
}

TEST(Dropper, MaxMinShareBreaksTiesByStreamId) {
  std::vector<std::pair<double, std::uint16_t>> dem = {{5.0, 9}, {5.0, 3}};
  EXPECT_DOUBLE_EQ(octopus::max_min_share(12.0, dem, 3), 5.0);
  dem = {{5.0, 9}, {5.0, 3}};
  EXPECT_DOUBLE_EQ(octopus::max_min_share(12.0, dem, 9), 7.0);  // the last takes the rest
}

}  // namespace
