#!/usr/bin/env bash
# Applies octoric's srsRAN_Project patch series (srsran_agent/patches/) to a checkout of srsRAN_Project
# release_25_10, then configures, builds and runs the series' unit tests.
#
#   srsran_agent/build.sh [--jobs N] [--tests-only] [--bench] SRC_DIR [BUILD_DIR]
#
# SRC_DIR   a git checkout of srsRAN_Project at tag release_25_10 (commit below) with a clean tree; the series is
#           applied with `git am` on a new branch, octoric/patches. A checkout where this script already applied the
#           same series is accepted as is (the build is resumed).
# BUILD_DIR the CMake build directory (default: SRC_DIR/build-octoric).
# --jobs N  parallel build jobs (default: all cores).
# --tests-only  build the series' test targets only, not the gnb application.
# --bench   after the tests, also run rlc_um_tx_benchmark in full (RLC UM TX with the Octopus dropper off vs on; it
#           is always built, and ctest runs a short check of it); its JSON line is in the summary.
#
# Configure: Release, BUILD_TESTING=ON, ENABLE_WERROR=ON (the series' own files are -Werror regardless), and
# OCTORIC_LIBOCTOPUS_DIR = this project's srsran_agent/liboctopus (built from here, never copied). The script installs
# nothing; when configure fails for want of srsRAN's build dependencies it prints the apt-get line.
# The series' E2 tests write the PDUs they produce to $OCTORIC_PDU_OUT (default BUILD_DIR/octoric-pdus), for
# `octoric e2sm decode`.
set -euo pipefail

readonly TAG=release_25_10
readonly TAG_COMMIT=d2f4b70dda8e2c557d5b05a0ac5f92dbddda19bc
readonly BRANCH=octoric/patches
# The series' test executables and the ctest names of their tests (every GoogleTest suite is octoric_*; the benchmark
# rlc_um_tx_benchmark has a short check run, ctest octoric_rlc_um_tx_benchmark; srsRAN's du_high_benchmark has two,
# octoric_du_high_benchmark_octopus_*, with the dropper on: patch 0010).
readonly TEST_TARGETS=(rlc_octopus_liboctopus_test rlc_um_octopus_test asn1_e2sm_rc_octoric_test e2sm_rc_octopus_test
  e2_indication_granularity_test e2sm_kpm_occ_test rlc_um_tx_benchmark e2sm_rc_ue_info_report_test
  du_high_benchmark e2_tcp_network_client_test mac_test mac_test_mode_adapter_test f1u_local_connector_test
  e2_subscription_setup_test rlc_metrics_short_period_test rlc_bearer_metrics_collector_test cu_cp_test)
readonly BENCH_TARGET=rlc_um_tx_benchmark
readonly BENCH_PATH=tests/benchmarks/rlc/rlc_um_tx_benchmark
readonly CTEST_REGEX='^octoric_'
# srsRAN_Project's build dependencies (its README), with GoogleTest for the unit tests.
readonly APT_PACKAGES=(cmake make gcc g++ pkg-config libfftw3-dev libmbedtls-dev libsctp-dev libyaml-cpp-dev
  libgtest-dev ccache)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_dir=$here/patches
liboctopus_dir=$here/liboctopus

usage() {
  sed -n '4,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
die() {
  echo "build.sh: $*" >&2
  exit 1
}

jobs=$(nproc 2>/dev/null || echo 2)
tests_only=0
bench=0
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --jobs)
    [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive number"
    jobs=$2
    shift 2
    ;;
  --jobs=*)
    jobs=${1#--jobs=}
    [[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive number"
    shift
    ;;
  --tests-only)
    tests_only=1
    shift
    ;;
  --bench)
    bench=1
    shift
    ;;
  -h | --help) usage 0 ;;
  -*) die "unknown option $1 (see --help)" ;;
  *)
    args+=("$1")
    shift
    ;;
  esac
done
[[ ${#args[@]} -ge 1 && ${#args[@]} -le 2 ]] || usage
src=$(cd "${args[0]}" 2>/dev/null && pwd) || die "no such directory: ${args[0]}"
build=$(realpath -m "${args[1]:-$src/build-octoric}")
export OCTORIC_PDU_OUT=${OCTORIC_PDU_OUT:-$build/octoric-pdus}

mapfile -t patches < <(find "$patch_dir" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' | sort)
[[ ${#patches[@]} -gt 0 ]] || die "no patches in $patch_dir"
[[ -f $liboctopus_dir/CMakeLists.txt ]] || die "no liboctopus at $liboctopus_dir"

timings=()
stage_start=0
begin() {
  stage_start=$SECONDS
  echo "== $*"
}
end() { timings+=("$(printf '%-34s %6ss' "$1" $((SECONDS - stage_start)))"); }

# --- the checkout -------------------------------------------------------------------------------------------------
begin "checking $src"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || die "$src is not a git checkout"
git -C "$src" cat-file -e "$TAG_COMMIT^{commit}" 2>/dev/null ||
  die "$src does not hold commit $TAG_COMMIT (tag $TAG); fetch the tag first"
# A build directory inside the checkout is not a local change.
pathspec=(.)
[[ $build == "$src"/* ]] && pathspec+=(":(exclude)${build#"$src"/}")
[[ -z $(git -C "$src" status --porcelain --untracked-files=normal -- "${pathspec[@]}") ]] ||
  die "$src has local changes or untracked files; the series is applied to a clean tree only"
head=$(git -C "$src" rev-parse HEAD)
applied=0
if [[ $head == "$TAG_COMMIT" ]]; then
  echo "at $TAG ($TAG_COMMIT), clean"
else
  # Accept a checkout where this script applied this very series: HEAD is the tag plus one commit per patch, with
  # the patches' subjects in order.
  mapfile -t have < <(git -C "$src" log --reverse --format=%s "$TAG_COMMIT..HEAD" 2>/dev/null || true)
  want=()
  for p in "${patches[@]}"; do
    want+=("$(git mailinfo /dev/null /dev/null <"$p" | sed -n 's/^Subject: //p')")
  done
  if git -C "$src" merge-base --is-ancestor "$TAG_COMMIT" HEAD && [[ "${have[*]}" == "${want[*]}" ]]; then
    applied=1
    echo "the series (${#patches[@]} patches) is already applied on $(git -C "$src" rev-parse --abbrev-ref HEAD)"
  else
    die "$src is at $head, not at $TAG ($TAG_COMMIT) and not this series applied to it"
  fi
fi
end "check checkout"

# --- apply --------------------------------------------------------------------------------------------------------
if [[ $applied -eq 0 ]]; then
  begin "applying ${#patches[@]} patches"
  # Check patch after patch on a scratch index (git apply given several files would check each against the tag),
  # so a series that does not apply leaves the checkout untouched.
  check_index=$(mktemp)
  GIT_INDEX_FILE=$check_index git -C "$src" read-tree HEAD
  for p in "${patches[@]}"; do
    if ! GIT_INDEX_FILE=$check_index git -C "$src" apply --cached --check "$p" ||
      ! GIT_INDEX_FILE=$check_index git -C "$src" apply --cached "$p"; then
      rm -f "$check_index"
      die "$(basename "$p") does not apply to $TAG plus the patches before it"
    fi
  done
  rm -f "$check_index"
  git -C "$src" checkout -q -b "$BRANCH" ||
    die "cannot create branch $BRANCH (delete it or use a fresh checkout)"
  git -C "$src" -c user.name="octoric build.sh" -c user.email="build.sh@octoric.invalid" \
    am -q --committer-date-is-author-date "${patches[@]}" || {
    git -C "$src" am --abort >/dev/null 2>&1 || true
    die "git am failed"
  }
  echo "applied on branch $BRANCH: $(git -C "$src" rev-parse --short HEAD)"
  end "apply series"
fi

# --- configure ----------------------------------------------------------------------------------------------------
begin "configuring $build"
generator=()
if command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
mkdir -p "$build" "$OCTORIC_PDU_OUT"
cfg_log=$build/octoric-configure.log
launcher=()
# ccache, when installed, makes a rebuild after a patch change or a new build directory minutes instead of an hour
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cfg=(cmake -S "$src" -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON
  -DENABLE_WERROR=ON "-DOCTORIC_LIBOCTOPUS_DIR=$liboctopus_dir")
echo "${cfg[*]}"
if ! command -v cmake >/dev/null 2>&1 || ! "${cfg[@]}" >"$cfg_log" 2>&1; then
  [[ -f $cfg_log ]] && tail -n 25 "$cfg_log" >&2
  missing=()
  if command -v dpkg-query >/dev/null 2>&1; then
    for pkg in "${APT_PACKAGES[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
  else
    missing=("${APT_PACKAGES[@]}")
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "build.sh: configure failed; srsRAN's build dependencies are missing. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install ${missing[*]}" >&2
  else
    echo "build.sh: configure failed (full log: $cfg_log)" >&2
  fi
  exit 1
fi
end "configure"

# --- build --------------------------------------------------------------------------------------------------------
targets=("${TEST_TARGETS[@]}")
[[ $tests_only -eq 1 ]] || targets=(gnb "${targets[@]}")
begin "building ${targets[*]} with $jobs jobs"
cmake --build "$build" --parallel "$jobs" --target "${targets[@]}"
end "build (${#targets[@]} targets)"

# --- test ---------------------------------------------------------------------------------------------------------
begin "running the series' unit tests (ctest -R '$CTEST_REGEX')"
test_log=$build/octoric-ctest.log
set +e
(cd "$build" && ctest -R "$CTEST_REGEX" --output-on-failure --timeout 300) | tee "$test_log"
rc=${PIPESTATUS[0]}
set -e
end "ctest -R $CTEST_REGEX"

# --- benchmark (--bench) ------------------------------------------------------------------------------------------
bench_json=
bench_rc=0
if [[ $bench -eq 1 ]]; then
  begin "running $BENCH_TARGET (dropper off vs on; the last line is JSON)"
  bench_log=$build/octoric-bench.log
  set +e
  "$build/$BENCH_PATH" | tee "$bench_log"
  bench_rc=${PIPESTATUS[0]}
  set -e
  bench_json=$(tail -n 1 "$bench_log")
  end "$BENCH_TARGET"
fi

summary=$(grep -E 'tests passed|No tests were found' "$test_log" | tail -n 1 || true)
echo
echo "== summary"
echo "source:  $src ($(git -C "$src" rev-parse --short HEAD) on $(git -C "$src" rev-parse --abbrev-ref HEAD), $TAG + ${#patches[@]} patches)"
echo "build:   $build"
echo "built:   ${targets[*]}"
echo "tests:   ${summary:-no ctest summary}"
if [[ $bench -eq 1 ]]; then
  echo "bench:   ${bench_json:-no output} (exit $bench_rc; log $build/octoric-bench.log)"
fi
echo "PDUs:    $OCTORIC_PDU_OUT ($(find "$OCTORIC_PDU_OUT" -name '*.bin' | wc -l) files)"
printf '%s\n' "${timings[@]}"
[[ $rc -eq 0 && $summary != *"No tests were found"* && -n $summary ]] || die "unit tests failed or did not run"
[[ $bench_rc -eq 0 ]] || die "$BENCH_TARGET failed (exit $bench_rc)"
