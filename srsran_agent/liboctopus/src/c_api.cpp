#include "octopus/header.h"
#include "octopus/octopus.h"

extern "C" {

int octopus_parse_header(const uint8_t* buf, size_t len, octopus_header* out) {
  octopus::header h;
  const octopus::parse_error e = octopus::parse_header(buf, len, h);
  if (e != octopus::parse_error::none) {
    return static_cast<int>(e);
  }
  if (out != nullptr) {
    *out = octopus_header{h.stream_id, h.msg_id, h.first, h.last, h.priority,
                          h.drop,      h.priority_threshold, h.bitrate_threshold_kbps};
  }
  return 0;
}

int octopus_encode_header(const octopus_header* h, uint8_t* out, size_t out_len) {
  if (h == nullptr || out == nullptr || out_len < octopus::header_len) {
    return -1;
  }
  octopus::header x;
  x.stream_id = h->stream_id;
  x.msg_id = h->msg_id;
  x.first = h->first != 0;
  x.last = h->last != 0;
  x.priority = h->priority;
  x.drop = h->drop != 0;
  x.priority_threshold = h->priority_threshold;
  x.bitrate_threshold_kbps = h->bitrate_threshold_kbps;
  return octopus::encode_header(x, out) ? 0 : -1;
}

const char* octopus_strerror(int code) {
  if (code < 0 || code > static_cast<int>(octopus::parse_error::bad_threshold)) {
    return "unknown error";
  }
  return octopus::to_string(static_cast<octopus::parse_error>(code));
}

}  // extern "C"
