// The header codec against the shared vectors (contracts/octopus_header_vectors.json), the same
// file the simulator's tests read.
#include <gtest/gtest.h>

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
