#!/usr/bin/env bash
# Base images for charts/Dockerfile made from Debian's own packages with mmdebstrap: for a
# machine with buildah/podman and a Debian mirror but no image registry. Nothing is downloaded
# from a registry; each base is a Debian bookworm rootfs imported into the local image store.
#   charts/base-images.sh [PREFIX]   -> PREFIX/python-build, PREFIX/python, PREFIX/rust (:bookworm)
# PREFIX defaults to localhost/octoric-base. Already present images are kept (delete them with
# `podman rmi` to rebuild). Needs root (or mmdebstrap's unshare mode) and buildah or podman.
set -euo pipefail
prefix="${1:-localhost/octoric-base}"
suite=bookworm
mirrors=(
  "deb http://deb.debian.org/debian $suite main"
  "deb http://deb.debian.org/debian $suite-updates main"
  # rustc-web/cargo-web (a current Rust for bookworm) come from the security archive
  "deb http://deb.debian.org/debian-security $suite-security main"
)
if command -v podman >/dev/null; then store=(podman); elif command -v buildah >/dev/null; then store=(buildah); else
  echo "base-images.sh: needs podman or buildah (apt-get install -y podman buildah)" >&2; exit 2; fi
command -v mmdebstrap >/dev/null || { echo "base-images.sh: needs mmdebstrap (apt-get install -y mmdebstrap)" >&2; exit 2; }

declare -A pkgs=(
  # the wheel stage: a venv, pip, and a compiler for the sdists requirements.lock pins (hiredis)
  [python-build]="python3.11 python3-venv python3-dev python-is-python3 build-essential ca-certificates"
  # the runtime: the interpreter the venv was made with, and nothing to build with
  [python]="python3.11 python-is-python3 ca-certificates"
  # the librmr stage
  [rust]="rustc-web cargo-web gcc libc6-dev binutils ca-certificates"
)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
for name in python-build python rust; do
  ref="$prefix/$name:$suite"
  if "${store[0]}" image exists "$ref" 2>/dev/null; then echo "kept $ref"; continue; fi
  echo "making $ref (mmdebstrap: ${pkgs[$name]})"
  t0=$SECONDS
  mmdebstrap --quiet --variant=minbase --include="${pkgs[$name]// /,}" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$suite" "$tmp/$name.tar" "${mirrors[@]}"
  "${store[0]}" import --quiet --change 'CMD ["/bin/bash"]' "$tmp/$name.tar" "$ref" >/dev/null
  rm -f "$tmp/$name.tar"
  echo "made $ref in $((SECONDS - t0)) s"
done
