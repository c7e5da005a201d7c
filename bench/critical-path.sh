#!/usr/bin/env bash
# Benchmark (not a test): the whole AWS lane in one graph against the per-stage ordering, with the
# production latencies of the slow AWS operations injected in front of the emulator (NAT 90 s,
# EKS control plane 540 s, node group 180 s, addon 60 s, NLB 180 s, OpenBao's servers 120 s),
# scaled down by BENCH_SCALE (default 100) so a run takes seconds.
#
#   bench/critical-path.sh
#
# Prints the one-graph apply wall time next to the graph's critical path and next to the time the
# same latencies take when each stage waits for the previous one (as the OpenTofu + Terramate
# stacks run), with the ratio. See tests/benches/critical_path.rs and testenv/fault_proxy.py.
set -euo pipefail
cd "$(dirname "$0")/.."

testenv/install-moto.sh >/dev/null
export ENGINE_MOTO_SERVER="$PWD/testenv/moto-server"
export ENGINE_BAO_BIN="$(testenv/install-openbao.sh)"
export ENGINE_REGISTRY_BIN="$(testenv/install-registry.sh)"
set -a
eval "$(testenv/install-kube.sh)"
set +a
RUSTC_VERSION="$(rustc --version | awk '{print $2}')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-rustc-$RUSTC_VERSION}"

# The dev profile the tests use: the injected latencies dominate, and a release build of the AWS
# SDK takes a quarter of an hour.
cargo bench --quiet --locked -p engine-tests --bench critical_path --profile "${BENCH_PROFILE:-dev}"
