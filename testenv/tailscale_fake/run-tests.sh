#!/usr/bin/env bash
# Conformance suite of the Tailscale API fake: starts testenv/tailscale_fake/server.py on a free
# port, drives it with Tailscale's official Go client (tailscale.com/client/tailscale/v2, from the
# Go module proxy, cached in Go's module cache) in conformance/, stops the server. Extra arguments
# go to `go test`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log="$(mktemp)"
key="tskey-api-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
coproc server { exec python3 "$here/server.py" -p 0 --api-key "$key" 2>"$log"; }
server_pid=$server_PID
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -f "$log"' EXIT
if ! read -r -t 30 word port <&"${server[0]}" || [[ "$word" != port ]]; then
    echo "the Tailscale fake did not start:" >&2
    cat "$log" >&2
    exit 1
fi
export TAILSCALE_FAKE_ENDPOINT="http://127.0.0.1:$port" TAILSCALE_FAKE_API_KEY="$key"
cd "$here/conformance"
status=0
go test -count=1 "$@" ./... || status=$?
if [[ -s "$log" ]]; then
    echo "--- server stderr ---" >&2
    cat "$log" >&2
fi
exit "$status"
