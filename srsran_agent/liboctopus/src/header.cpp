#include "octopus/header.h"

namespace octopus {

namespace {

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

void put32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

}  // namespace

bool header::operator==(const header& o) const {
  return stream_id == o.stream_id && msg_id == o.msg_id && first == o.first && last == o.last &&
         priority == o.priority && drop == o.drop && priority_threshold == o.priority_threshold &&
         bitrate_threshold_kbps == o.bitrate_threshold_kbps;
}

const char* to_string(parse_error e) {
  switch (e) {
    case parse_error::none:
      return "ok";
    case parse_error::too_short:
      return "shorter than 16 bytes";
    case parse_error::bad_magic:
      return "bad magic (want 0x4F43)";
    case parse_error::bad_version:
      return "unsupported version (want 1)";
    case parse_error::reserved_flags:
      return "reserved flag bits set";
    case parse_error::bad_priority:
      return "priority > 7";
    case parse_error::bad_threshold:
      return "priority threshold > 7";
  }
  return "unknown error";
}

parse_error classify_header(const std::uint8_t* buf, std::size_t len) {
  if (buf == nullptr || len < header_len) {
    return parse_error::too_short;
  }
  if (buf[0] != (header_magic >> 8) || buf[1] != (header_magic & 0xFF)) {
    return parse_error::bad_magic;
  }
  if (buf[2] != header_version) {
    return parse_error::bad_version;
  }
  if ((buf[3] & flags_reserved) != 0) {
    return parse_error::reserved_flags;
  }
  if (buf[6] >= max_levels) {
    return parse_error::bad_priority;
  }
  if (buf[7] >= max_levels) {
    return parse_error::bad_threshold;
  }
  return parse_error::none;  // not reached from parse_header: every check above passed
}

bool encode_header(const header& h, std::uint8_t* out) {
  if (h.priority >= max_levels || h.priority_threshold >= max_levels) {
    return false;
  }
  put16(out, header_magic);
  out[2] = header_version;
  out[3] = static_cast<std::uint8_t>((h.first ? flag_first : 0) | (h.last ? flag_last : 0) |
                                     (h.drop ? flag_drop : 0));
  put16(out + 4, h.stream_id);
  out[6] = h.priority;
  out[7] = h.priority_threshold;
  put32(out + 8, h.msg_id);
  put32(out + 12, h.bitrate_threshold_kbps);
  return true;
}

}  // namespace octopus
