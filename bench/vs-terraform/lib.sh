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

