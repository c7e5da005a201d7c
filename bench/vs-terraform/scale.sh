#!/usr/bin/env bash
# Benchmark (not a test): how a no-op plan grows with the size of what is managed. N copies of
# the network stage (44 resources each: N = 1, 4, 16 gives 44 to 704), for Terraform one
# configuration with `copies = N` (bench/vs-terraform/network), for the engine N specs in one
# invocation (the network of specs/aws.toml on 10.I.0.0/16 and 100.(64+I).0.0/16 for cluster
# `aws-I`), each tool against a fresh moto behind the same counting proxy. Prints, per N, the
# no-op plan's wall time (median of RUNS) and API calls, the calls per copy (the engine's grow
# with the VPCs and kinds, not with the resources), the CPU seconds the emulator spent answering
# them (moto is one Python process: its work, not the engine's, sets the engine's wall time as N
# grows; the engine's tag-filtered Describe* calls cost moto more than Terraform's by-id ones),
# the peak RSS, and terraform/engine ratios.
#
#   bench/vs-terraform/scale.sh [RUNS] [N...]        # default: 3 runs, N = 1 4 16
#
# BENCH_PROFILE and ENGINE_BIN as for run.sh. A cold Terraform apply of 16 copies takes minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
RUNS="${1:-3}"
shift || true
COPIES=("${@:-1 4 16}")
read -r -a COPIES <<<"${COPIES[*]}"
source bench/vs-terraform/lib.sh

# The engine's copy I of the network stage of specs/aws.toml.
network_copy() {
    local i="$1"
    awk '/^# Stage 2/{exit} {print}' specs/aws.toml | python3 -c '
import sys
i = int(sys.argv[1])
text = sys.stdin.read()
if i:
    text = (text.replace("\"10.0.", f"\"10.{i}.")
                .replace("\"100.64.", f"\"100.{64 + i}.")
                .replace("\"aws-0\"", f"\"aws-{i}\"")
                .replace("priv.aws.ogenki.io", f"priv{i}.aws.ogenki.io"))
sys.stdout.write(text)
' "$i"
}

# CPU seconds the emulator (the first process `peers` started) has used so far.
emulator_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/${PIDS[0]}/stat"; }

plan_wall() { for r in $(seq "$RUNS"); do field "$WORK/$1-plan-$r.json" wall_seconds; done | median; }
plan_rss() { for r in $(seq "$RUNS"); do field "$WORK/$1-plan-$r.json" peak_rss_mib; done | sort -g | tail -1; }

ROWS="$WORK/rows"
: >"$ROWS"
for n in "${COPIES[@]}"; do
    # Terraform: one configuration, N copies.
    peers "tf$n"
    mkdir -p "$WORK/tf$n"
    cp -r bench/vs-terraform/network/. "$WORK/tf$n/"
    (cd "$WORK/tf$n" && terraform init -input=false -no-color >/dev/null)
    vars=(-var "endpoint=$ENDPOINT" -var "copies=$n")
    (cd "$WORK/tf$n" && terraform apply -auto-approve -input=false -no-color -parallelism=10 "${vars[@]}" >"$WORK/tf$n-apply.out") ||
        { echo "terraform apply of $n copies failed:" >&2; tail -30 "$WORK/tf$n-apply.out" >&2; exit 1; }
    for r in $(seq "$RUNS"); do
        : >"$JOURNAL"
        before="$(emulator_cpu)"
        (cd "$WORK/tf$n" && measure "$WORK/tf$n-plan-$r.json" -- terraform plan -detailed-exitcode -input=false -no-color "${vars[@]}" >"$WORK/tf$n-plan.out") ||
            { echo "terraform's no-op plan of $n copies is not empty:" >&2; tail -30 "$WORK/tf$n-plan.out" >&2; exit 1; }
        tf_calls="$(calls "$JOURNAL")"
        tf_cpu="$(python3 -c "print(round($(emulator_cpu) - $before, 2))")"
    done

    # The engine: N specs, one invocation.
    kill "${PIDS[@]}" 2>/dev/null || true
    PIDS=()
    peers "engine$n"
    mkdir -p "$WORK/specs$n"
    specs=()
    for i in $(seq 0 $((n - 1))); do
        network_copy "$i" >"$WORK/specs$n/net-$i.toml"
        specs+=("$WORK/specs$n/net-$i.toml")
    done
    AWS_ENDPOINT_URL="$ENDPOINT" "$ENGINE" apply "${specs[@]}" --auto-approve >"$WORK/engine$n-apply.out" 2>&1 ||
        { echo "the engine's apply of $n copies failed:" >&2; tail -30 "$WORK/engine$n-apply.out" >&2; exit 1; }
    for r in $(seq "$RUNS"); do
        : >"$JOURNAL"
        before="$(emulator_cpu)"
        AWS_ENDPOINT_URL="$ENDPOINT" measure "$WORK/engine$n-plan-$r.json" -- "$ENGINE" plan "${specs[@]}" --detailed-exitcode >"$WORK/engine$n-plan.out" 2>&1 ||
            { echo "the engine's no-op plan of $n copies is not empty:" >&2; tail -30 "$WORK/engine$n-plan.out" >&2; exit 1; }
        engine_calls="$(calls "$JOURNAL")"
        engine_cpu="$(python3 -c "print(round($(emulator_cpu) - $before, 2))")"
    done
    echo "$n $(plan_wall "tf$n") $(plan_wall "engine$n") $tf_calls $engine_calls $tf_cpu $engine_cpu $(plan_rss "tf$n") $(plan_rss "engine$n")" >>"$ROWS"
    # This size's peers are done with.
    kill "${PIDS[@]}" 2>/dev/null || true
    PIDS=()
done
trap 'rm -rf "$WORK"' EXIT

python3 - "$ROWS" "$RUNS" "$PROFILE" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
runs, profile = sys.argv[2], sys.argv[3]
print(f"no-op plan of N copies of the network stage against moto (median of {runs}); engine built with the {profile} profile")
head = ("copies", "resources", "plan s: tf", "engine", "tf/engine", "calls: tf", "engine", "tf/engine",
        "per copy: tf", "engine", "moto cpu: tf", "engine", "RSS MiB: tf", "engine", "tf/engine")
print(" ".join(f"{h:>12}" for h in head))
for n, tf_s, en_s, tf_c, en_c, tf_u, en_u, tf_m, en_m in rows:
    n = int(n)
    tf_s, en_s, tf_c, en_c, tf_u, en_u, tf_m, en_m = map(float, (tf_s, en_s, tf_c, en_c, tf_u, en_u, tf_m, en_m))
    cells = (n, 44 * n, f"{tf_s:.2f}", f"{en_s:.2f}", f"{tf_s / en_s:.1f}x", int(tf_c), int(en_c),
             f"{tf_c / en_c:.1f}x", f"{tf_c / n:.1f}", f"{en_c / n:.1f}", f"{tf_u:.2f}", f"{en_u:.2f}",
             f"{tf_m:.0f}", f"{en_m:.0f}", f"{tf_m / en_m:.1f}x")
    print(" ".join(f"{c:>12}" for c in cells))
PY
