#!/usr/bin/env bash
# Build librmr_si.so and a send/receive/rts loop, run the loop under valgrind, and fail on
# any leak (definite or indirect) or memory error; then the crate's tests under ASan when a
# nightly toolchain is there. Run by `make test-all`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
crate="$(dirname "$here")"
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 1; }
command -v cc >/dev/null || { echo "no C compiler" >&2; exit 1; }

cargo build -q --release --manifest-path "$crate/Cargo.toml"
lib="$crate/target/release"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O1 -g -Wall -Werror -o "$work/leakloop" "$here/leakloop.c" -L"$lib" -lrmr_si -Wl,-rpath,"$lib"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa="$(port)"; pb="$(port)"
printf 'newrt|start\nrte|1|127.0.0.1:%s\nnewrt|end\n' "$pb" > "$work/rt"
export RMR_SEED_RT="$work/rt" RMR_RTG_SVC=-1 RMR_BIND_IF=127.0.0.1 RMR_LOG_VLEVEL=0

valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
  "$work/leakloop" "$pa" "$pb" "${RMR_LEAK_ITERATIONS:-500}"
echo "valgrind: no leaks, no memory errors"

# ASan + LeakSanitizer over the crate's own tests (loopback contexts), where a nightly
# toolchain exists (-Zsanitizer is nightly-only); skipped with a note otherwise.
if command -v rustup >/dev/null && rustup toolchain list | grep -q '^nightly'; then
  RUSTFLAGS="-Zsanitizer=address" ASAN_OPTIONS=detect_leaks=1 \
    cargo +nightly test -q --release --manifest-path "$crate/Cargo.toml" \
    --target "$(rustc -vV | sed -n 's/^host: //p')" --target-dir "$crate/target/asan"
  echo "asan: crate tests clean"
else
  echo "asan: skipped (no nightly toolchain); valgrind result above stands"
fi
