#!/usr/bin/env bash
# Compares `helm template` (reference v4.2.4) with engine-helm's native
# renderer (crates/helm/examples/render.rs, release build) on the fixture
# charts and value sets of the golden tests. For each case it prints the
# mean wall time per render of each (one process per render, like a user
# running the command) and the ratio. Charts that generate certificates
# (Cilium's CA and Hubble's server certificate) make RSA-2048 keys as Sprig
# does (crates/helm/src/funcs/rsa.rs); they are also measured with ECDSA
# keys (`--ecdsa-keys`) to show what the keys cost.
#
# Usage: bench/helm/run.sh [ITERATIONS]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ITER="${1:-10}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/engine/target-helm}"
HELM="${ENGINE_HELM_BIN:-$("$ROOT/testenv/install-helm.sh")}"
FIXTURES="${ENGINE_FIXTURES_DIR:-$ROOT/../shared/fixtures/charts}"
VALUES="$ROOT/crates/helm/tests/values"

cargo build --release -q -p engine-helm --example render -j 2
OURS="$CARGO_TARGET_DIR/release/examples/render"

CASES=(
  "flux-operator-0.49.0.tgz:"
  "flux-operator-0.49.0.tgz:flux-operator-features.yaml"
  "flux-instance-0.49.0.tgz:flux-instance.yaml"
  "cilium-1.19.6.tgz:"
  "cilium-1.19.6.tgz:cilium-aws.yaml"
  "cilium-1.20.0.tgz:"
  "cilium-1.20.0.tgz:cilium-aws.yaml"
  "cilium-1.20.0.tgz:cilium-gcp.yaml"
  "cilium-1.20.0.tgz:cilium-features.yaml"
)

# Mean wall time in milliseconds of one run of "$@" over ITER runs.
mean_ms() {
  "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; return 1; }
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < ITER; i++)); do "$@" >/dev/null 2>&1; done
  end=$(date +%s%N)
  awk -v ns="$((end - start))" -v n="$ITER" 'BEGIN { printf "%.1f", ns / n / 1e6 }'
}

ratio() { awk -v h="$1" -v o="$2" 'BEGIN { if (o <= 0) o = 0.1; printf "%.1fx", h / o }'; }

printf '%-26s %-28s %10s %10s %7s %12s %7s\n' "chart" "values" "helm(ms)" "ours(ms)" "ratio" "ours-ec(ms)" "ratio"
for c in "${CASES[@]}"; do
  chart="${c%%:*}"
  vals="${c##*:}"
  args=()
  if [[ -n "$vals" ]]; then args=(-f "$VALUES/$vals"); fi
  h=$(mean_ms "$HELM" template release-name "$FIXTURES/$chart" "${args[@]}")
  o=$(mean_ms "$OURS" "$FIXTURES/$chart" "${args[@]}")
  e=$(mean_ms "$OURS" "$FIXTURES/$chart" "${args[@]}" --ecdsa-keys)
  printf '%-26s %-28s %10s %10s %7s %12s %7s\n' "$chart" "${vals:-defaults}" "$h" "$o" "$(ratio "$h" "$o")" "$e" "$(ratio "$h" "$e")"
done
