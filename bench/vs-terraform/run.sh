#!/usr/bin/env bash
# Benchmark (not a test): the engine and Terraform side by side on the network stage (the same
# 43/44 resources: bench/vs-terraform/network for Terraform, the network of specs/aws.toml for
# the engine), each against a fresh moto behind the same counting proxy (testenv/fault_proxy.py
# --journal). Prints a table: cold apply wall time, no-op plan wall time (median of RUNS), API
# calls of a no-op plan, peak RSS of the whole process tree, and engine/terraform ratios.
#
#   bench/vs-terraform/run.sh [RUNS]
#
# BENCH_PROFILE=release builds an optimised engine (a cold release build of the AWS SDK takes
# ~16 minutes); the default is the dev build the tests use; ENGINE_BIN names a binary to use
# as it is. API calls are machine-independent;
# times and memory are not. Terraform 1.11 and the AWS provider 5.100 come with this machine
# (testenv/terraform-config.sh finds the provider mirror).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
RUNS="${1:-5}"
source bench/vs-terraform/lib.sh

# Terraform.
peers terraform
mkdir -p "$WORK/tf"
cp -r bench/vs-terraform/network/. "$WORK/tf/"
(cd "$WORK/tf" && terraform init -input=false -no-color >/dev/null)
(cd "$WORK/tf" && measure "$WORK/tf-apply.json" -- terraform apply -auto-approve -input=false -no-color -var "endpoint=$ENDPOINT" >/dev/null)
for i in $(seq "$RUNS"); do
    : >"$JOURNAL"
    (cd "$WORK/tf" && measure "$WORK/tf-plan-$i.json" -- terraform plan -detailed-exitcode -input=false -no-color -var "endpoint=$ENDPOINT" >"$WORK/tf-plan.out") \
        || { echo "terraform's no-op plan is not empty:" >&2; cat "$WORK/tf-plan.out" >&2; exit 1; }
    TF_CALLS="$(calls "$JOURNAL")"
done

# The engine.
peers engine
awk '/^# Stage 2/{exit} {print}' specs/aws.toml >"$WORK/aws.toml"
export AWS_ENDPOINT_URL="$ENDPOINT"
measure "$WORK/engine-apply.json" -- "$ENGINE" apply "$WORK/aws.toml" --auto-approve >/dev/null 2>&1
for i in $(seq "$RUNS"); do
    : >"$JOURNAL"
    measure "$WORK/engine-plan-$i.json" -- "$ENGINE" plan "$WORK/aws.toml" --detailed-exitcode >"$WORK/engine-plan.out" \
        || { echo "the engine's no-op plan is not empty:" >&2; cat "$WORK/engine-plan.out" >&2; exit 1; }
    ENGINE_CALLS="$(calls "$JOURNAL")"
done

side_by_side_table "network stage against moto"
