#!/usr/bin/env bash
# Benchmark (not a test): the engine and Terraform side by side on the network and EKS stages of
# specs/aws.toml (bench/vs-terraform/eks for Terraform, which includes ../network/vpc; for the
# engine the `[globals]`, `[network]` and `[eks]` sections of specs/aws.toml planned with
# `--target aws.network --target aws.eks`), each against a fresh moto (with the project's EKS
# extension, testenv/moto-server) behind the same counting proxy (testenv/fault_proxy.py
# --journal). Prints what Terraform leaves out (nothing, with the extension), the resource count
# of each tool, then the table of run.sh: cold apply wall time, no-op plan wall time (median of
# RUNS), API calls of a no-op plan, peak RSS of the whole process tree, terraform/engine ratios.
#
#   bench/vs-terraform/eks.sh [RUNS]       # default 5; BENCH_PROFILE and ENGINE_BIN as for run.sh
#
# moto runs with MOTO_IAM_LOAD_MANAGED_POLICIES=true: the roles attach AWS managed policies.
# Against moto every EKS call completes at once (no ~10 minute control plane): the apply times
# are the tools' own overhead, not AWS's.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
RUNS="${1:-${RUNS:-5}}"
export MOTO_IAM_LOAD_MANAGED_POLICIES=true
source bench/vs-terraform/lib.sh
TARGETS=(--target aws.network --target aws.eks)

# Terraform: eks/ next to network/ (its module source is ../network/vpc).
peers terraform
mkdir -p "$WORK/tf"
cp -r bench/vs-terraform/network bench/vs-terraform/eks "$WORK/tf/"
TF="$WORK/tf/eks"
(cd "$TF" && terraform init -input=false -no-color >/dev/null)
(cd "$TF" && measure "$WORK/tf-apply.json" -- terraform apply -auto-approve -input=false -no-color -var "endpoint=$ENDPOINT" >"$WORK/tf-apply.out" 2>&1) ||
    { echo "terraform apply failed:" >&2; tail -40 "$WORK/tf-apply.out" >&2; exit 1; }
TF_RESOURCES="$(cd "$TF" && terraform state list | wc -l)"
# What eks/ leaves out where the emulator lacks an API (its `include_*` variables), one line each.
LEFT_OUT="$(cd "$TF" && terraform output -json left_out | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')"
for i in $(seq "$RUNS"); do
    : >"$JOURNAL"
    (cd "$TF" && measure "$WORK/tf-plan-$i.json" -- terraform plan -detailed-exitcode -input=false -no-color -var "endpoint=$ENDPOINT" >"$WORK/tf-plan.out" 2>&1) ||
        { echo "terraform's no-op plan is not empty:" >&2; cat "$WORK/tf-plan.out" >&2; exit 1; }
    TF_CALLS="$(calls "$JOURNAL")"
done

# The engine: specs/aws.toml's globals, network (stage 1) and EKS (stage 3) sections.
peers engine
awk '/^# Stage 2/{skip=1} /^# Stage 3/{skip=0} /^# Stage 4/{exit} !skip{print}' specs/aws.toml >"$WORK/aws.toml"
export AWS_ENDPOINT_URL="$ENDPOINT"
STATE="$WORK/engine.state.json"
measure "$WORK/engine-apply.json" -- "$ENGINE" apply "$WORK/aws.toml" "${TARGETS[@]}" --state "$STATE" --auto-approve >"$WORK/engine-apply.out" 2>&1 ||
    { echo "the engine's apply failed:" >&2; tail -40 "$WORK/engine-apply.out" >&2; exit 1; }
ENGINE_RESOURCES="$("$ENGINE" state list --state "$STATE" | grep -c '^aws\.' || true)"
for i in $(seq "$RUNS"); do
    : >"$JOURNAL"
    measure "$WORK/engine-plan-$i.json" -- "$ENGINE" plan "$WORK/aws.toml" "${TARGETS[@]}" --state "$STATE" --detailed-exitcode >"$WORK/engine-plan.out" 2>&1 ||
        { echo "the engine's no-op plan is not empty:" >&2; cat "$WORK/engine-plan.out" >&2; exit 1; }
    ENGINE_CALLS="$(calls "$JOURNAL")"
done

if [[ -n $LEFT_OUT ]]; then
    sed 's/^/left out for Terraform: /' <<<"$LEFT_OUT"
else
    echo "left out for Terraform: nothing (moto with testenv/moto_ext serves every call the AWS provider makes for eks/)"
fi
echo "resources: terraform $TF_RESOURCES, engine $ENGINE_RESOURCES (an EventBridge rule and its target are two" \
    "Terraform resources and one of the engine's; the engine's controller sweep and the gateway's" \
    "attachment have no Terraform resource)"

side_by_side_table "network + EKS stages against moto"
