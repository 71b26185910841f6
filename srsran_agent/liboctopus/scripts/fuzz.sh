#!/usr/bin/env bash
# libFuzzer campaign on the Octopus header parser (and the dropper fed with what parses).
#   srsran_agent/liboctopus/scripts/fuzz.sh [RUNS]     default 10,000,000 inputs
# Needs clang (Debian: apt-get install clang). Seeds: the shared header vectors.
set -euo pipefail
runs="${1:-10000000}"
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/build/liboctopus-fuzz"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake "${gen[@]}" -S "$here" -B "$out" -DOCTOPUS_FUZZ=ON -DOCTOPUS_TESTS=OFF -DOCTOPUS_TOOLS=OFF \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out" -j2 --target fuzz_header
seeds="$out/seeds"; mkdir -p "$seeds"
python3 - "$repo/contracts/octopus_header_vectors.json" "$seeds" <<'PY'
import json, sys, pathlib
v = json.load(open(sys.argv[1]))
for i, c in enumerate(v["valid"] + v["invalid"]):
    pathlib.Path(sys.argv[2], f"v{i}").write_bytes(bytes.fromhex(c["hex"]))
PY
corpus="$out/corpus"; mkdir -p "$corpus"
"$out/fuzz_header" -runs="$runs" -max_len=64 -print_final_stats=1 "$corpus" "$seeds" 2>&1 | tail -20
