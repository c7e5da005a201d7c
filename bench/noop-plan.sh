#!/usr/bin/env bash
# Benchmark (not a test): a no-op `engine plan specs/aws.toml` against the local emulator.
# Prints wall time over several runs, API calls by operation, and resources refreshed.
#
#   bench/noop-plan.sh [RUNS]
#
# BENCH_PROFILE=release builds an optimised engine (a cold release build of the AWS SDK takes
# ~16 minutes); the default is the dev build the tests use. API call counts are
# machine-independent; times are not.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-10}"
MOTO="$(testenv/install-moto.sh)"
PROFILE="${BENCH_PROFILE:-dev}"
cargo build --quiet --profile "$PROFILE" -p engine-cli
TARGET="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
ENGINE="$TARGET/$([[ $PROFILE == dev ]] && echo debug || echo "$PROFILE")/engine"

WORK="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$MOTO" -H 127.0.0.1 -p "$PORT" >"$WORK/moto.log" 2>&1 &
MOTO_PID=$!
trap 'kill $MOTO_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done

export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
       AWS_REGION=eu-west-3 AWS_EC2_METADATA_DISABLED=true NO_COLOR=1
STATE="$WORK/aws.state.json"
"$ENGINE" apply specs/aws.toml --state "$STATE" --auto-approve >/dev/null 2>&1

python3 - "$ENGINE" "$STATE" "$RUNS" <<'PY'
import json, statistics, subprocess, sys, time
engine, state, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times, doc = [], None
for _ in range(runs):
    t = time.perf_counter()
    out = subprocess.run([engine, "plan", "specs/aws.toml", "--state", state, "--json"],
                         check=True, capture_output=True, text=True).stdout
    times.append(time.perf_counter() - t)
    doc = json.loads(out)
assert not doc["has_changes"], "the plan is not a no-op"
calls = doc["api_calls"]
print(f"no-op plan of specs/aws.toml against moto ({runs} runs, {engine})")
print(f"  wall time: min {min(times)*1000:.0f} ms, median {statistics.median(times)*1000:.0f} ms, max {max(times)*1000:.0f} ms")
print(f"  resources refreshed: {doc['refreshed']}")
print(f"  API calls: {sum(calls.values())} ({sum(calls.values())/doc['refreshed']:.2f} per resource)")
for op, n in sorted(calls.items()):
    print(f"    {op:42} {n}")
print("  reference (OpenTofu + AWS provider): not run; its providers come from the provider")
print("  registry, which this machine cannot reach.")
PY
