// The Octopus header (docs/octopus-header.md): 16 bytes at the start of a UDP payload that mark
// each packet with its application message, so a gNB can drop whole messages (SEC'23 Alg. 1).
#pragma once

#include <cstddef>
#include <cstdint>

namespace octopus {

constexpr std::uint16_t header_magic = 0x4F43;  // "OC"
constexpr std::uint8_t header_version = 1;
constexpr std::size_t header_len = 16;
constexpr unsigned max_levels = 8;

constexpr std::uint8_t flag_first = 0x80;
constexpr std::uint8_t flag_last = 0x40;
constexpr std::uint8_t flag_drop = 0x20;
constexpr std::uint8_t flags_reserved = 0x1F;

struct header {
  std::uint16_t stream_id = 0;
  std::uint32_t msg_id = 0;
  bool first = false;
  bool last = false;
  std::uint8_t priority = 0;  // 0..7, higher = less important
  bool drop = false;          // this is a dropper message
  std::uint8_t priority_threshold = 0;
  std::uint32_t bitrate_threshold_kbps = 0;  // 0 = off

  bool operator==(const header& o) const;
  bool operator!=(const header& o) const { return !(*this == o); }
};

enum class parse_error : std::uint8_t {
  none = 0,
  too_short,
  bad_magic,
  bad_version,
  reserved_flags,
  bad_priority,
  bad_threshold,
};

// A short English description of an error ("bad magic", ...).
const char* to_string(parse_error e);

// Parses the header at the start of buf[0..len). On error `out` is left unchanged. Inline: a
// gNB calls it for every packet it queues.
inline parse_error parse_header(const std::uint8_t* buf, std::size_t len, header& out) {
  if (buf == nullptr || len < header_len) {
    return parse_error::too_short;
  }
  if (buf[0] != (header_magic >> 8) || buf[1] != (header_magic & 0xFF)) {
    return parse_error::bad_magic;
  }
  if (buf[2] != header_version) {
    return parse_error::bad_version;
  }
  const std::uint8_t flags = buf[3];
  if ((flags & flags_reserved) != 0) {
    return parse_error::reserved_flags;
  }
  if (buf[6] >= max_levels) {
    return parse_error::bad_priority;
  }
  if (buf[7] >= max_levels) {
    return parse_error::bad_threshold;
  }
  out.stream_id = static_cast<std::uint16_t>((buf[4] << 8) | buf[5]);
  out.first = (flags & flag_first) != 0;
  out.last = (flags & flag_last) != 0;
  out.drop = (flags & flag_drop) != 0;
  out.priority = buf[6];
  out.priority_threshold = buf[7];
  out.msg_id = (std::uint32_t{buf[8]} << 24) | (std::uint32_t{buf[9]} << 16) |
               (std::uint32_t{buf[10]} << 8) | std::uint32_t{buf[11]};
  out.bitrate_threshold_kbps = (std::uint32_t{buf[12]} << 24) | (std::uint32_t{buf[13]} << 16) |
                               (std::uint32_t{buf[14]} << 8) | std::uint32_t{buf[15]};
  return parse_error::none;
}

// Writes the 16-byte header to out (which must hold header_len bytes). Returns false (and writes
// nothing) when priority or priority threshold is out of 0..7.
bool encode_header(const header& h, std::uint8_t* out);

// a < b in 32-bit serial-number arithmetic (RFC 1982): message ids may wrap.
constexpr bool serial_lt(std::uint32_t a, std::uint32_t b) {
  return a != b && static_cast<std::uint32_t>(b - a) < 0x80000000U;
}

}  // namespace octopus
