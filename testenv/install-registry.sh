#!/usr/bin/env bash
# Installs a local OCI registry (Debian package `docker-registry`, the CNCF
# distribution registry) used by the OCI pull tests. Idempotent.
# Prints the path of the registry binary on stdout.
set -euo pipefail

BIN="${ENGINE_REGISTRY_BIN:-/usr/bin/docker-registry}"

if [[ -x "${BIN}" ]]; then
  echo "${BIN}"
  exit 0
fi

SUDO=""
if [[ "$(id -u)" != "0" ]]; then
  SUDO="sudo"
fi

echo "install-registry.sh: installing docker-registry" >&2
${SUDO} apt-get update >&2
DEBIAN_FRONTEND=noninteractive ${SUDO} apt-get install -y --no-install-recommends docker-registry >&2
# The package starts a system service on some setups; tests run their own.
if command -v systemctl >/dev/null 2>&1; then
  ${SUDO} systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
test -x /usr/bin/docker-registry
echo /usr/bin/docker-registry
