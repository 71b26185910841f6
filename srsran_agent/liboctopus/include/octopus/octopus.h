/* C interface to the Octopus header for senders written in C (docs/octopus.md). */
#ifndef OCTOPUS_OCTOPUS_H
#define OCTOPUS_OCTOPUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OCTOPUS_HEADER_LEN 16

typedef struct octopus_header {
  uint16_t stream_id;
  uint32_t msg_id;
  uint8_t first;    /* 1: first packet of the message */
  uint8_t last;     /* 1: last packet of the message */
  uint8_t priority; /* 0..7, higher = less important */
  uint8_t drop;     /* 1: a dropper message */
  uint8_t priority_threshold;      /* 0..7 */
  uint32_t bitrate_threshold_kbps; /* 0 = off */
} octopus_header;

/* 0 on success, else a positive error code; octopus_strerror() names it. */
int octopus_parse_header(const uint8_t* buf, size_t len, octopus_header* out);
/* Writes OCTOPUS_HEADER_LEN bytes to out (out_len must be >= that); 0 on success, -1 if a field
 * is out of range or the buffer too small. */
int octopus_encode_header(const octopus_header* h, uint8_t* out, size_t out_len);
const char* octopus_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* OCTOPUS_OCTOPUS_H */
