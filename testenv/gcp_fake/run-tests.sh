#!/usr/bin/env bash
# Conformance suite of the GCP fake: installs its environment (testenv/install-gcp-fake.sh),
# starts testenv/gcp-fake-server on a free port, runs the tests (Google's official Python
# clients against the fake), stops the server. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$("$here/../install-gcp-fake.sh")"
export PYTHONDONTWRITEBYTECODE=1
log="$(mktemp)"
coproc server { exec "$here/../gcp-fake-server" -p 0 2>"$log"; }
server_pid=$server_PID
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -f "$log"' EXIT
if ! read -r -t 30 word port <&"${server[0]}" || [[ "$word" != port ]]; then
    echo "gcp-fake-server did not start:" >&2
    cat "$log" >&2
    exit 1
fi
export GCP_FAKE_ENDPOINT="http://127.0.0.1:$port"
cd "$here/tests"
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" || status=$?
if [[ -s "$log" ]]; then
    echo "--- server stderr ---" >&2
    cat "$log" >&2
fi
exit "$status"
