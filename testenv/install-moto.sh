#!/usr/bin/env bash
# Installs moto server 5.2.5 into a virtualenv cached under ~/.cache/engine/moto-5.2.5.
# Idempotent: a second run only prints the path of moto_server.
set -euo pipefail
MOTO_VERSION=5.2.5
PREFIX="${ENGINE_CACHE:-$HOME/.cache/engine}/moto-$MOTO_VERSION"
BIN="$PREFIX/bin/moto_server"
if [[ ! -x "$BIN" ]] || ! "$PREFIX/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
    rm -rf "$PREFIX"
    python3 -m venv "$PREFIX"
    "$PREFIX/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
fi
echo "$BIN"
