#!/usr/bin/env bash
# Fetches Flux's Kustomization CRD (from the kustomize-controller Go module, through the Go
# module proxy) so tests can validate clusters/<cluster>/ against it. Cached by version; prints
# the directory holding the CRD files.
set -euo pipefail

VERSION="${FLUX_KUSTOMIZE_CONTROLLER_VERSION:-v1.9.6}"
PREFIX="${HOME}/.cache/engine/flux-crds-${VERSION}"

if [[ -s "${PREFIX}/kustomize.toolkit.fluxcd.io_kustomizations.yaml" ]]; then
  echo "${PREFIX}"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
cd "${WORK}"
dir="$(GOFLAGS=-mod=mod go mod download -json "github.com/fluxcd/kustomize-controller@${VERSION}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "${PREFIX}"
cp "${dir}"/config/crd/bases/*.yaml "${PREFIX}/"
chmod u+w "${PREFIX}"/*.yaml
echo "${PREFIX}"
