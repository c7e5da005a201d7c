#!/usr/bin/env bash
# Installs the reference `helm` binary (v4.2.4) built from the Go module proxy.
# Idempotent: does nothing when the binary is already present.
# Prints the path of the binary on stdout.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.2.4}"
PREFIX="${HOME}/.cache/engine/helm-${HELM_VERSION}"
BIN="${PREFIX}/bin/helm"

if [[ -x "${BIN}" ]]; then
  echo "${BIN}"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  if [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:${PATH}"
  else
    echo "install-helm.sh: the Go toolchain is required to build helm" >&2
    exit 1
  fi
fi

mkdir -p "${PREFIX}/bin"
echo "install-helm.sh: building helm ${HELM_VERSION} (this takes a few minutes)" >&2
GOBIN="${PREFIX}/bin" CGO_ENABLED=0 nice -n 19 go install "helm.sh/helm/v4/cmd/helm@${HELM_VERSION}" >&2
test -x "${BIN}"
echo "${BIN}"
