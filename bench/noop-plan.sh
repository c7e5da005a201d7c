#!/usr/bin/env bash
# Benchmark (not a test): a no-op `engine plan specs/aws.toml` (the whole lane) against the
# sandbox's local peers (testenv/sandbox peers), or of `specs/gcp.toml` against the GCP fake
# (BENCH_CLOUD=gcp, testenv/sandbox up --cloud gcp).
# Prints wall time over several runs, the plan's peak resident memory (target: under 150 MiB
# for the whole lane), API calls by operation, and resources refreshed.
#
#   [BENCH_CLOUD=gcp] bench/noop-plan.sh [RUNS]
#
# BENCH_PROFILE=release builds an optimised engine (a cold release build of the AWS SDK takes
# ~16 minutes); the default is the dev build the tests use. API call counts are
# machine-independent; times are not.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-10}"
CLOUD="${BENCH_CLOUD:-aws}"
PROFILE="${BENCH_PROFILE:-dev}"
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"
cargo build --quiet --profile "$PROFILE" -p engine-cli
ENGINE="$CARGO_TARGET_DIR/$([[ $PROFILE == dev ]] && echo debug || echo "$PROFILE")/engine"

# The sandbox's peers (moto, OpenBao, kube-apiserver, the chart registry, the Tailscale fake) on
# free ports, in a directory of their own.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export SANDBOX_DIR="$(mktemp -d)" SANDBOX_MOTO_PORT="$(free_port)" SANDBOX_REGISTRY_PORT="$(free_port)"
export SANDBOX_BAO_PORT="$(free_port)" SANDBOX_GCP_PORT="$(free_port)" SANDBOX_TAILSCALE_PORT="$(free_port)"
trap 'testenv/sandbox down >/dev/null 2>&1; rm -rf "$SANDBOX_DIR"' EXIT
export NO_COLOR=1
if [[ $CLOUD == gcp ]]; then
    testenv/sandbox up --cloud gcp >/dev/null 2>&1
    # shellcheck disable=SC1091
    source "$SANDBOX_DIR/gcp-env"
else
    testenv/sandbox peers >/dev/null
    # shellcheck disable=SC1091
    source "$SANDBOX_DIR/env"
    "$ENGINE" apply specs/aws.toml --auto-approve >/dev/null 2>&1
fi
STATE="$ENGINE_STATE"

python3 - "$ENGINE" "$STATE" "$RUNS" "specs/$CLOUD.toml" <<'PY'
import json, resource, statistics, subprocess, sys, time
engine, state, runs, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
times, doc = [], None
for _ in range(runs):
    t = time.perf_counter()
    out = subprocess.run([engine, "plan", spec, "--state", state, "--json"],
                         check=True, capture_output=True, text=True).stdout
    times.append(time.perf_counter() - t)
    doc = json.loads(out)
assert not doc["has_changes"], "the plan is not a no-op"
calls = doc["api_calls"]
print(f"no-op plan of {spec} against the sandbox peers ({runs} runs, {engine})")
print(f"  wall time: min {min(times)*1000:.0f} ms, median {statistics.median(times)*1000:.0f} ms, max {max(times)*1000:.0f} ms")
print(f"  resources refreshed: {doc['refreshed']}")
# The largest peak resident set of the plans run above (Linux reports KiB).
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"  peak RSS of a plan: {peak:.0f} MiB (target: under 150 MiB)")
print(f"  API calls: {sum(calls.values())} ({sum(calls.values())/doc['refreshed']:.2f} per resource)")
for op, n in sorted(calls.items()):
    print(f"    {op:42} {n}")
print("  side by side with Terraform on the same emulator: bench/vs-terraform/run.sh, scale.sh")
PY
