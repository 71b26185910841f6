// The C interface senders use: round trip and errors.
#include <gtest/gtest.h>

#include "octopus/octopus.h"

TEST(CApi, EncodeThenParse) {
  octopus_header h{};
  h.stream_id = 7;
  h.msg_id = 0x1234;
  h.first = 1;
  h.priority = 3;
  h.drop = 1;
  h.priority_threshold = 3;
  h.bitrate_threshold_kbps = 3000;
  uint8_t buf[OCTOPUS_HEADER_LEN + 4] = {};
  ASSERT_EQ(octopus_encode_header(&h, buf, sizeof buf), 0);
  octopus_header back{};
  ASSERT_EQ(octopus_parse_header(buf, sizeof buf, &back), 0);
  EXPECT_EQ(back.stream_id, 7);
  EXPECT_EQ(back.msg_id, 0x1234U);
  EXPECT_EQ(back.first, 1);
  EXPECT_EQ(back.last, 0);
  EXPECT_EQ(back.priority, 3);
  EXPECT_EQ(back.drop, 1);
  EXPECT_EQ(back.priority_threshold, 3);
  EXPECT_EQ(back.bitrate_threshold_kbps, 3000U);
}

TEST(CApi, ErrorsAreNamed) {
  uint8_t buf[4] = {};
  octopus_header h{};
  const int e = octopus_parse_header(buf, sizeof buf, &h);
  EXPECT_GT(e, 0);
  EXPECT_STREQ(octopus_strerror(e), "shorter than 16 bytes");
  EXPECT_STREQ(octopus_strerror(99), "unknown error");
  EXPECT_EQ(octopus_encode_header(&h, buf, sizeof buf), -1);  // too small
  h.priority = 9;
  uint8_t big[16] = {};
  EXPECT_EQ(octopus_encode_header(&h, big, sizeof big), -1);
}
