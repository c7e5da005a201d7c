# Shared by run.sh and scale.sh (sourced from the project root, `set -euo pipefail` on): the
# engine binary (ENGINE), Terraform's provider mirror, a scratch directory (WORK) whose peers
# are stopped on exit, and helpers to start a fresh moto behind the counting proxy and measure a
# command.
PROFILE="${BENCH_PROFILE:-dev}"
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"
if [[ -z ${ENGINE_BIN:-} ]]; then
    cargo build --quiet --profile "$PROFILE" -p engine-cli
fi
ENGINE="${ENGINE_BIN:-$CARGO_TARGET_DIR/$([[ $PROFILE == dev ]] && echo debug || echo "$PROFILE")/engine}"
testenv/install-moto.sh >/dev/null
export TF_CLI_CONFIG_FILE="$(testenv/terraform-config.sh)"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=eu-west-3
export AWS_EC2_METADATA_DISABLED=true NO_COLOR=1 TF_IN_AUTOMATION=1
unset AWS_PROFILE ENGINE_STATE ENGINE_OVERLAY
WORK="$(mktemp -d)"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A fresh moto and a counting proxy in front of it; sets ENDPOINT and JOURNAL.
peers() {
    local name="$1" port
    port="$(free_port)"
    testenv/moto-server -H 127.0.0.1 -p "$port" >"$WORK/$name-moto.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do curl -s "http://127.0.0.1:$port/moto-api/" >/dev/null && break; sleep 0.1; done
    JOURNAL="$WORK/$name.journal"
    : >"$JOURNAL"
    python3 testenv/fault_proxy.py "http://127.0.0.1:$port" --journal "$JOURNAL" >"$WORK/$name-proxy.out" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do grep -qs '^port ' "$WORK/$name-proxy.out" && break; sleep 0.1; done
    ENDPOINT="http://127.0.0.1:$(awk '/^port /{print $2}' "$WORK/$name-proxy.out")"
}

measure() { python3 "$ROOT/bench/vs-terraform/measure.py" "$@"; }
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
calls() { grep -c '^sent ' "$1" || true; }

# The table of a side-by-side run from the measurements in $WORK ($RUNS plans each, $TF_CALLS
# and $ENGINE_CALLS of the last ones, the engine's build $PROFILE); $1 says what was run.
side_by_side_table() {
    plan_wall() { for i in $(seq "$RUNS"); do field "$WORK/$1-plan-$i.json" wall_seconds; done | median; }
    plan_rss() { for i in $(seq "$RUNS"); do field "$WORK/$1-plan-$i.json" peak_rss_mib; done | sort -g | tail -1; }
    python3 - "$(field "$WORK/tf-apply.json" wall_seconds)" "$(field "$WORK/engine-apply.json" wall_seconds)" \
        "$(plan_wall tf)" "$(plan_wall engine)" "$TF_CALLS" "$ENGINE_CALLS" \
        "$(field "$WORK/tf-apply.json" peak_rss_mib)" "$(field "$WORK/engine-apply.json" peak_rss_mib)" \
        "$(plan_rss tf)" "$(plan_rss engine)" "$RUNS" "$PROFILE" "$1" <<'PY'
import sys
a = [float(x) for x in sys.argv[1:11]]
runs, profile, what = sys.argv[11], sys.argv[12], sys.argv[13]
rows = [
    ("cold apply (s)", a[0], a[1]),
    (f"no-op plan, median of {runs} (s)", a[2], a[3]),
    ("no-op plan API calls", a[4], a[5]),
    ("peak RSS, apply (MiB)", a[6], a[7]),
    ("peak RSS, no-op plan (MiB)", a[8], a[9]),
]
print(f"{what}; engine built with the {profile} profile")
print(f"{'':34} {'terraform':>10} {'engine':>10} {'terraform/engine':>17}")
for name, tf, engine in rows:
    ratio = tf / engine if engine else float("inf")
    print(f"{name:34} {tf:10.2f} {engine:10.2f} {ratio:16.1f}x")
PY
}
