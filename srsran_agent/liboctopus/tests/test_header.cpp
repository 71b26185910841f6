// The header codec against the shared vectors (contracts/octopus_header_vectors.json), the same
// file the simulator's tests read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "octopus/header.h"

namespace {

using octopus::header;
using octopus::parse_error;

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

nlohmann::json vectors() {
  std::ifstream f(OCTOPUS_VECTORS);
  EXPECT_TRUE(f.good()) << "cannot read " << OCTOPUS_VECTORS;
  return nlohmann::json::parse(f);
}

header fields(const nlohmann::json& j) {
  header h;
  h.stream_id = j.at("stream_id").get<std::uint16_t>();
  h.msg_id = j.at("msg_id").get<std::uint32_t>();
  h.first = j.at("first").get<bool>();
  h.last = j.at("last").get<bool>();
  h.priority = j.at("priority").get<std::uint8_t>();
  h.drop = j.at("drop").get<bool>();
  h.priority_threshold = j.at("priority_threshold").get<std::uint8_t>();
  h.bitrate_threshold_kbps = j.at("bitrate_threshold_kbps").get<std::uint32_t>();
  return h;
}

TEST(Header, VectorsFileMatchesTheCodec) {
  const auto v = vectors();
  EXPECT_EQ(v.at("version").get<int>(), octopus::header_version);
  EXPECT_EQ(v.at("header_len").get<std::size_t>(), octopus::header_len);
}

TEST(Header, ValidVectorsParseAndEncodeBack) {
  const auto v = vectors();
  ASSERT_FALSE(v.at("valid").empty());
  for (const auto& c : v.at("valid")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto bytes = from_hex(c.at("hex").get<std::string>());
    header got;
    ASSERT_EQ(octopus::parse_header(bytes.data(), bytes.size(), got), parse_error::none);
    EXPECT_EQ(got, fields(c.at("fields")));
    std::uint8_t out[octopus::header_len] = {};
    ASSERT_TRUE(octopus::encode_header(got, out));
    EXPECT_EQ(std::vector<std::uint8_t>(out, out + octopus::header_len),
              std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + octopus::header_len));
  }
}

TEST(Header, InvalidVectorsAreRejectedAndLeaveTheOutputAlone) {
  const auto v = vectors();
  ASSERT_FALSE(v.at("invalid").empty());
  for (const auto& c : v.at("invalid")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto bytes = from_hex(c.at("hex").get<std::string>());
    header got;
    got.stream_id = 4242;
    const parse_error e = octopus::parse_header(bytes.data(), bytes.size(), got);
    EXPECT_NE(e, parse_error::none);
    EXPECT_EQ(got.stream_id, 4242);
    EXPECT_STRNE(octopus::to_string(e), "ok");
  }
}

TEST(Header, EachRejectionHasItsOwnReason) {
  std::uint8_t b[16] = {0x4f, 0x43, 1, 0xc0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  header h;
  EXPECT_EQ(octopus::parse_header(b, 15, h), parse_error::too_short);
  EXPECT_EQ(octopus::parse_header(nullptr, 16, h), parse_error::too_short);
  b[0] = 0x4e;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::bad_magic);
  b[0] = 0x4f;
  b[2] = 2;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::bad_version);
  b[2] = 1;
  b[3] = 0xc1;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::reserved_flags);
  b[3] = 0xc0;
  b[6] = 8;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::bad_priority);
  b[6] = 7;
  b[7] = 8;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::bad_threshold);
  b[7] = 7;
  EXPECT_EQ(octopus::parse_header(b, 16, h), parse_error::none);
}

// The reading the header format defines (docs/octopus-header.md), byte by byte: what the
// parser's masked word compare must agree with.
parse_error reference_parse(const std::uint8_t* b, header& out) {
  if (b[0] != 0x4f || b[1] != 0x43) return parse_error::bad_magic;
  if (b[2] != 1) return parse_error::bad_version;
  if ((b[3] & 0x1f) != 0) return parse_error::reserved_flags;
  if (b[6] > 7) return parse_error::bad_priority;
  if (b[7] > 7) return parse_error::bad_threshold;
  out.first = (b[3] & 0x80) != 0;
  out.last = (b[3] & 0x40) != 0;
  out.drop = (b[3] & 0x20) != 0;
  out.stream_id = static_cast<std::uint16_t>(b[4] * 256 + b[5]);
  out.priority = b[6];
  out.priority_threshold = b[7];
  out.msg_id = 0;
  out.bitrate_threshold_kbps = 0;
  for (int i = 0; i < 4; ++i) {
    out.msg_id = out.msg_id * 256 + b[8 + i];
    out.bitrate_threshold_kbps = out.bitrate_threshold_kbps * 256 + b[12 + i];
  }
  return parse_error::none;
}

TEST(Header, EveryByteValueAtEveryPositionParsesAsTheFormatSays) {
  // Exhaustive over single-byte changes of a valid header (16 positions x 256 values), and
  // over pairs of the checked bytes 0-7 (each with a few values), so each masked bit is hit
  // alone and together with another failure.
  const std::uint8_t valid[16] = {0x4f, 0x43, 1, 0xa0, 0x12, 0x34, 3, 5,
                                  0xde, 0xad, 0xbe, 0xef, 0, 0, 0x0b, 0xb8};
  auto check = [](const std::uint8_t* b) {
    header want;
    header got;
    got.stream_id = 4242;
    const parse_error e = octopus::parse_header(b, 16, got);
    const parse_error r = reference_parse(b, want);
    ASSERT_EQ(e, r);
    if (e == parse_error::none) {
      EXPECT_EQ(got, want);
    } else {
      EXPECT_EQ(got.stream_id, 4242);  // untouched on error
    }
  };
  std::uint8_t b[16];
  for (int pos = 0; pos < 16; ++pos) {
    for (int v = 0; v < 256; ++v) {
      std::copy(valid, valid + 16, b);
      b[pos] = static_cast<std::uint8_t>(v);
      SCOPED_TRACE(testing::Message() << "byte " << pos << " = " << v);
      check(b);
    }
  }
  const std::uint8_t probes[] = {0x00, 0x01, 0x07, 0x08, 0x1f, 0x20, 0x43, 0x4f, 0x80, 0xff};
  for (int p = 0; p < 8; ++p) {
    for (int q = p + 1; q < 8; ++q) {
      for (std::uint8_t x : probes) {
        for (std::uint8_t y : probes) {
          std::copy(valid, valid + 16, b);
          b[p] = x;
          b[q] = y;
          SCOPED_TRACE(testing::Message() << "bytes " << p << ", " << q << " = " << int{x} << ", "
                                          << int{y});
          check(b);
        }
      }
    }
  }
}

TEST(Header, EncodeRefusesOutOfRangeFields) {
  header h;
  h.priority = 8;
  std::uint8_t out[16] = {};
  EXPECT_FALSE(octopus::encode_header(h, out));
  EXPECT_EQ(out[0], 0);
  h.priority = 0;
  h.priority_threshold = 9;
  EXPECT_FALSE(octopus::encode_header(h, out));
}

TEST(Header, SerialArithmeticWraps) {
  EXPECT_TRUE(octopus::serial_lt(1, 2));
  EXPECT_FALSE(octopus::serial_lt(2, 1));
  EXPECT_FALSE(octopus::serial_lt(5, 5));
  EXPECT_TRUE(octopus::serial_lt(0xFFFFFFFFU, 0));
  EXPECT_FALSE(octopus::serial_lt(0, 0xFFFFFFFFU));
}

}  // namespace
