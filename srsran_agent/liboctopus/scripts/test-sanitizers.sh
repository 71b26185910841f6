#!/usr/bin/env bash
# make test-all: liboctopus's tests under ASan+UBSan, then a short libFuzzer run of the header
# parser (scripts/fuzz.sh runs the 10 M-input campaign).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/build/liboctopus-asan"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake "${gen[@]}" -S "$here" -B "$out" -DOCTOPUS_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out" -j2
(cd "$out" && ctest --output-on-failure -j2)
"$here/scripts/fuzz.sh" 200000
