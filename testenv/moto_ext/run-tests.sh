#!/usr/bin/env bash
# Runs the tests of the moto EKS extension against testenv/moto-server, with pytest
# installed (once) into the moto virtualenv. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTEST_VERSION=9.2.0
venv="${ENGINE_CACHE:-$HOME/.cache/engine}/moto-5.2.5"
"$here/../install-moto.sh" >/dev/null
if ! "$venv/bin/python" -c "import pytest, sys; sys.exit(pytest.__version__ != '$PYTEST_VERSION')" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check "pytest==$PYTEST_VERSION" >&2
fi
export PYTHONDONTWRITEBYTECODE=1
cd "$here/tests"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
