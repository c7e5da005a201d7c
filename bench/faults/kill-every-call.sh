#!/usr/bin/env bash
# Soak (not a test): the engine SIGKILLed right after each mutating call of a cold apply of the
# network stage commits, one run per call (the test suite does a spread of 15), each followed by
# a re-run that must converge with no duplicate and an empty second plan.
#
#   bench/faults/kill-every-call.sh
#
# Uses the fault proxy (testenv/aws_proxy.py --kill-after) in front of moto; see
# tests/e2e/faults.rs. Prints the number of kill points and how long the soak took.
set -euo pipefail
cd "$(dirname "$0")/../.."

testenv/install-moto.sh >/dev/null
export ENGINE_MOTO_SERVER="$PWD/testenv/moto-server"
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"

cargo build --quiet --locked -p engine-cli
started=$(date +%s)
ENGINE_FAULT_KILL_POINTS=all cargo test --quiet --locked -p engine-tests --test e2e -- \
    --exact faults::killed_after_a_mutating_call_commits_the_rerun_converges_without_duplicates \
    --nocapture 2>&1 | grep -E "kills over|test result"
echo "soak: $(( $(date +%s) - started )) s"
