#!/usr/bin/env bash
# Installs `cargo deny` (0.20.2), built from crates.io once and cached by version.
# Idempotent: does nothing when the binary is already present.
# Prints the path of the binary on stdout.
set -euo pipefail

CARGO_DENY_VERSION="${CARGO_DENY_VERSION:-0.20.2}"
PREFIX="${HOME}/.cache/engine/cargo-deny-${CARGO_DENY_VERSION}"
BIN="${PREFIX}/bin/cargo-deny"

if [[ -x "${BIN}" ]]; then
  echo "${BIN}"
  exit 0
fi

echo "install-cargo-deny.sh: building cargo-deny ${CARGO_DENY_VERSION} (about two minutes)" >&2
# Built in a directory of its own, not the engine's target directory.
env -u CARGO_TARGET_DIR nice -n 10 cargo install cargo-deny --version "${CARGO_DENY_VERSION}" \
  --locked --root "${PREFIX}" >&2
test -x "${BIN}"
echo "${BIN}"
