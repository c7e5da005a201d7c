#!/usr/bin/env bash
# Soak (not a test) of the fault-injection suite (tests/e2e/faults.rs, tests/e2e/outages.rs) at
# full length:
# - the engine SIGKILLed right after each mutating call of a cold apply of the network stage
#   commits, one run per call (the test suite does a spread of 15), each followed by a re-run
#   that must converge with no duplicate and an empty second plan;
# - a security group's delete refused with DependencyViolation for 3 minutes (the suite: 20 s);
# - the cluster's API server unreachable for 3 minutes after a release write (the suite: 60 s);
# - OpenBao sealed for 2 minutes under an apply (the suite: 60 s);
# - the whole lane killed every 5th to 14th mutating call (the suite: every 15th).
#
#   bench/faults/soak.sh
#
# Uses the fault proxy (testenv/fault_proxy.py) in front of moto, OpenBao and kube-apiserver.
# Prints the kill points and how long the soak took.
set -euo pipefail
cd "$(dirname "$0")/../.."

testenv/install-moto.sh >/dev/null
export ENGINE_MOTO_SERVER="$PWD/testenv/moto-server"
ENGINE_BAO_BIN="$(testenv/install-openbao.sh)"
ENGINE_HELM_BIN="$(testenv/install-helm.sh)"
ENGINE_REGISTRY_BIN="$(testenv/install-registry.sh)"
export ENGINE_BAO_BIN ENGINE_HELM_BIN ENGINE_REGISTRY_BIN
set -a
eval "$(testenv/install-kube.sh)"
set +a
ENGINE_FLUX_CRDS="$(testenv/install-flux-crds.sh)"
export ENGINE_FLUX_CRDS
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"

cargo build --quiet --locked -p engine-cli
started=$(date +%s)
ENGINE_FAULT_KILL_POINTS=all ENGINE_FAULT_DRAIN_SECONDS=180 \
    ENGINE_FAULT_OUTAGE_SECONDS=180 \
    cargo test --quiet --locked -p engine-tests --test e2e -- --test-threads 2 --nocapture \
    --include-ignored faults:: outages:: 2>&1 | grep -E "kills|test |test result"
# The whole lane killed every N-th mutating call for several N: each stride lands its kills
# in other windows (the suite: every 15th).
for stride in 5 6 7 8 9 10 11 12 13 14; do
    ENGINE_FAULT_STRIDE=$stride cargo test --quiet --locked -p engine-tests --test e2e -- \
        --nocapture faults::the_whole_lane_killed 2>&1 | grep -E "kills|test |test result"
done
# OpenBao sealed under an apply for two minutes (the suite: one), then unsealed.
ENGINE_FAULT_OUTAGE_SECONDS=120 cargo test --quiet --locked -p engine-openbao --test openbao -- \
    --nocapture sealed_for 2>&1 | grep -E "test |test result"
echo "soak: $(( $(date +%s) - started )) s"
