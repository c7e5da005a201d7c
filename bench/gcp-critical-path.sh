#!/usr/bin/env bash
# Benchmark (not a test): a cold apply of the GCP lane's cloud stages (`specs/gcp.toml`, network
# and GKE) against the GCP fake with production latencies of its long operations, divided by
# SCALE (default 20). Prints the wall time against the critical path (what the graph cannot run
# in parallel) and against running every operation one after the other, as a stack-by-stack
# tool would.
#
#   bench/gcp-critical-path.sh [SCALE]
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-20}"
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"
cargo build --quiet -p engine-cli
ENGINE="$CARGO_TARGET_DIR/debug/engine"
DIR="$(mktemp -d)"
FAKE=""
trap '[[ -n $FAKE ]] && kill "$FAKE" 2>/dev/null; rm -rf "$DIR"' EXIT

# Production durations in seconds (typical GCP figures), by the fake's method names.
declare -A SECONDS_OF=(
    [networks.insert]=25 [subnetworks.insert]=20 [routers.insert]=10 [routers.patch]=35
    [firewalls.insert]=10 [clusters.create]=420 [nodePools.delete]=150 [nodePools.create]=180
)
args=()
for method in "${!SECONDS_OF[@]}"; do
    args+=(--operation-latency "$method=$(python3 -c "print(${SECONDS_OF[$method]}/$SCALE)")")
done
testenv/gcp-fake-server -p 0 "${args[@]}" >"$DIR/fake.out" 2>"$DIR/fake.log" &
FAKE=$!
for _ in $(seq 1 100); do grep -q '^port ' "$DIR/fake.out" && break; sleep 0.1; done
export ENGINE_GCP_ENDPOINT="http://127.0.0.1:$(awk '/^port /{print $2}' "$DIR/fake.out")"
export NO_COLOR=1

# OpenBao is left out: its `[openbao] ca_file` names an offline root made here.
"$ENGINE" pki init-root "$DIR/pki" >/dev/null
printf '[openbao]\nca_file = "%s"\n' "$DIR/pki/root-ca.crt" >"$DIR/overlay.toml"

start=$(date +%s.%N)
"$ENGINE" apply specs/gcp.toml --cloud gcp --state "$DIR/gcp.state.json" --overlay "$DIR/overlay.toml" \
    --exclude gcp.bootstrap --exclude gcp.openbao --auto-approve >"$DIR/apply.log" 2>&1 ||
    { cat "$DIR/apply.log"; exit 1; }
end=$(date +%s.%N)

python3 - "$start" "$end" "$SCALE" <<'PY'
import sys
start, end, scale = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
s = {"network": 25, "subnetwork": 20, "router": 10, "nat": 35, "cluster": 420,
     "default pool delete": 150, "node pool": 180}
critical = s["network"] + s["subnetwork"] + s["cluster"] + s["default pool delete"] + s["node pool"]
serial = sum(s.values())
wall = (end - start) * scale
print(f"cold apply of specs/gcp.toml (network + GKE) against the GCP fake, latencies / {scale:g}")
print(f"  wall time, scaled back:   {wall:7.0f} s")
print(f"  critical path:            {critical:7.0f} s  (network, subnetwork, cluster, default pool removed, node pool)")
print(f"  every operation in turn:  {serial:7.0f} s")
print(f"  wall / critical path:     {wall / critical:7.2f}")
print(f"  serial / wall:            {serial / wall:7.2f}x")
print(f"  unscaled: wall {end - start:.1f} s for a critical path of {critical / scale:.1f} s; the")
print("  difference is mostly polling (a wait looks again after up to 10 s for Compute and 15 s")
print("  for GKE, which latencies divided by the scale make count for more)")
PY
