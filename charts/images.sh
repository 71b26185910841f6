#!/usr/bin/env bash
# make images: the three xApp images from charts/Dockerfile, with docker or buildah.
#   charts/images.sh REGISTRY TAG     -> REGISTRY/octoric-{occ,handover,octopus}:TAG
# BASE=public (the Dockerfile's public base images) or BASE=debian (bases made here from
# Debian's packages by charts/base-images.sh, no image registry needed); default: public with a
# Docker engine, debian with buildah. CA_BUNDLE: a CA bundle for the build's downloads.
set -euo pipefail
registry="${1:-registry.local:5000}"; tag="${2:-1.0.0}"
cd "$(dirname "$0")/.."
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  build=(docker build); base="${BASE:-public}"
elif command -v buildah >/dev/null; then
  # chroot isolation: the RUN steps need no OCI runtime, cgroups or user namespaces, so the
  # build works in a VM or container whose cgroup layout crun refuses (hybrid v1/v2)
  build=(buildah bud --layers --isolation chroot); base="${BASE:-debian}"
else
  echo "make images: no container builder here (neither a running docker engine nor buildah)." >&2
  echo "Install one (Debian: apt-get install -y buildah podman mmdebstrap), or build elsewhere:" >&2
  echo "  docker build -f charts/Dockerfile --target occ -t $registry/octoric-occ:$tag ." >&2
  exit 2
fi
args=(--build-arg "VERSION=$tag")
# a host behind a TLS-inspecting proxy trusts its CA through SSL_CERT_FILE (or CA_BUNDLE):
# the build's cargo and pip get the same bundle as a secret (never stored in an image layer)
ca="${CA_BUNDLE:-${SSL_CERT_FILE:-}}"
if [ -n "$ca" ] && [ -s "$ca" ]; then args+=(--secret "id=cacert,src=$ca"); fi
if [ "$base" = debian ]; then
  bases="${BASE_PREFIX:-localhost/octoric-base}"
  bash charts/base-images.sh "$bases"
  args+=(--build-arg "PYTHON_IMAGE=$bases/python:bookworm"
         --build-arg "PYTHON_BUILD_IMAGE=$bases/python-build:bookworm"
         --build-arg "RUST_IMAGE=$bases/rust:bookworm")
fi
for x in occ handover octopus; do
  echo "building $registry/octoric-$x:$tag (bases: $base)"
  t0=$SECONDS
  "${build[@]}" -f charts/Dockerfile --target "$x" "${args[@]}" -t "$registry/octoric-$x:$tag" .
  echo "built $registry/octoric-$x:$tag in $((SECONDS - t0)) s"
done
echo "push: docker push $registry/octoric-<name>:$tag (or buildah push); then docs/deploy.md"
