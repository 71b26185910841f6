#!/usr/bin/env bash
# make images: the three xApp images from charts/Dockerfile, with docker or buildah.
#   charts/images.sh REGISTRY TAG     -> REGISTRY/octoric-{occ,handover,octopus}:TAG
set -euo pipefail
registry="${1:-registry.local:5000}"; tag="${2:-1.0.0}"
cd "$(dirname "$0")/.."
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  build=(docker build)
elif command -v buildah >/dev/null; then
  build=(buildah bud --layers)
else
  echo "make images: no container builder here (neither a running docker engine nor buildah)." >&2
  echo "Install one, or build elsewhere: docker build -f charts/Dockerfile --target occ -t $registry/octoric-occ:$tag ." >&2
  exit 2
fi
for x in occ handover octopus; do
  echo "building $registry/octoric-$x:$tag"
  "${build[@]}" -f charts/Dockerfile --target "$x" --build-arg "VERSION=$tag" -t "$registry/octoric-$x:$tag" .
done
echo "push: docker push $registry/octoric-<name>:$tag (or buildah push); then docs/deploy.md"
