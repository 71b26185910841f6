// The Octopus header (docs/octopus-header.md): 16 bytes at the start of a UDP payload that mark
// each packet with its application message, so a gNB can drop whole messages (SEC'23 Alg. 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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

// Why a header did not parse (the first failed check, in the order of parse_error). Out of line:
// only malformed headers reach it.
parse_error classify_header(const std::uint8_t* buf, std::size_t len);

namespace detail {

inline std::uint64_t load_be64(const std::uint8_t* p) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // one load and a byte swap (GCC left the portable loop below as eight loads and shifts when
  // inlined into srsRAN's RLC)
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_bswap64(v);
#else
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = (v << 8) | p[i];
  }
  return v;
#endif
}

// Bytes 0-7 (magic, version, flags, stream, priority, threshold) as one big-endian word: the bits
// a valid header fixes, and their values (magic, version 1, no reserved flag, priority and
// threshold < 8).
constexpr std::uint64_t fixed_mask = 0xFFFFFF1F0000F8F8ULL;
constexpr std::uint64_t fixed_want = (std::uint64_t{header_magic} << 48) |
                                     (std::uint64_t{header_version} << 40);
static_assert(max_levels == 8, "fixed_mask checks priorities < 8 by their high bits");
static_assert(flags_reserved == 0x1F, "fixed_mask checks the reserved flag bits");

}  // namespace detail

// Parses the header at the start of buf[0..len). On error `out` is left unchanged. Inline: a
// gNB calls it for every packet it queues. Every check is one masked compare of the first eight
// bytes; which one failed is worked out only for a malformed header.
inline parse_error parse_header(const std::uint8_t* buf, std::size_t len, header& out) {
  if (buf == nullptr || len < header_len) {
    return parse_error::too_short;
  }
  const std::uint64_t w0 = detail::load_be64(buf);
  if ((w0 & detail::fixed_mask) != detail::fixed_want) {
    return classify_header(buf, len);
  }
  const std::uint64_t w1 = detail::load_be64(buf + 8);
  const auto flags = static_cast<std::uint8_t>(w0 >> 32);
  out.stream_id = static_cast<std::uint16_t>(w0 >> 16);
  out.first = (flags & flag_first) != 0;
  out.last = (flags & flag_last) != 0;
  out.drop = (flags & flag_drop) != 0;
  out.priority = static_cast<std::uint8_t>(w0 >> 8);
  out.priority_threshold = static_cast<std::uint8_t>(w0);
  out.msg_id = static_cast<std::uint32_t>(w1 >> 32);
  out.bitrate_threshold_kbps = static_cast<std::uint32_t>(w1);
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
