// libFuzzer target: the header parser and the dropper fed with whatever parses.
// Build: cmake -DOCTOPUS_FUZZ=ON -DOCTOPUS_TESTS=OFF -DCMAKE_CXX_COMPILER=clang++ (see README).
#include <cstddef>
#include <cstdint>

#include "octopus/dropper.h"
#include "octopus/header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static octopus::dropper d(500);
  static std::int64_t now = 0;
  octopus::header h;
  if (octopus::parse_header(data, size, h) == octopus::parse_error::none) {
    std::uint8_t again[octopus::header_len];
    if (!octopus::encode_header(h, again)) {
      __builtin_trap();  // whatever parses must encode
    }
    octopus::header back;
    if (octopus::parse_header(again, sizeof again, back) != octopus::parse_error::none ||
        back != h) {
      __builtin_trap();  // and round-trip
    }
    const auto len = static_cast<std::uint32_t>(size);
    now += 100;
    d.on_enqueue(h, len, now);
    d.should_drop(h, len, now);
    d.on_slot(len, (size & 1U) != 0);
  }
  return 0;
}
