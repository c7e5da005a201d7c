#!/usr/bin/env bash
# End-to-end check of the local test control plane:
#   install (cached) -> kube-up -> /readyz -> Deployment pod Running/Ready on a
#   kwok node -> CRD Established + a custom object -> Job Complete -> pod
#   deletion -> kube-down (no process left behind).
#
#   testenv/kube/smoke.sh [DIR]     (default: a temporary directory, removed on success)
#
# Ends with "N passed, N failed"; exit status 0 only when every check passed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TESTENV="$(dirname "${HERE}")"
if [[ -n "${1:-}" ]]; then
  DIR="$1"; OWN_DIR=0
else
  DIR="$(mktemp -d "${TMPDIR:-/tmp}/kube-smoke.XXXXXX")"; OWN_DIR=1
fi

passed=0
failed=0
check() {
  local what="$1"; shift
  local t0 t1
  t0="$(date +%s%N)"
  if "$@"; then
    t1="$(date +%s%N)"
    passed=$((passed + 1))
    printf 'ok   %-55s %6d ms\n' "${what}" $(((t1 - t0) / 1000000))
  else
    failed=$((failed + 1))
    printf 'FAIL %s\n' "${what}"
  fi
}

eval "$("${TESTENV}/install-kube.sh")"
export KUBE_BIN_DIR
trap '"${TESTENV}/kube-down.sh" "${DIR}" >/dev/null 2>&1 || true' EXIT

up() { "${TESTENV}/kube-up.sh" "${DIR}" >/dev/null; }
check "kube-up.sh ${DIR}" up
if [[ ! -f "${DIR}/env" ]]; then
  echo "${passed} passed, ${failed} failed"
  exit 1
fi
# shellcheck source=/dev/null
source "${DIR}/env"
k() { "${KUBECTL}" --request-timeout=20s "$@"; }

readyz() { [[ "$(k get --raw /readyz)" == ok ]]; }
check "GET /readyz is ok" readyz

version_matches() { [[ "$(k version -o json | grep -c "\"gitVersion\": \"${KUBE_VERSION}\"")" -ge 2 ]]; }
check "client and server report ${KUBE_VERSION}" version_matches

deployment() {
  k create namespace smoke >/dev/null
  k -n smoke create deployment web --image=registry.k8s.io/pause:3.10 --replicas=1 >/dev/null
  k -n smoke rollout status deployment/web --timeout=90s >/dev/null
  k -n smoke wait pod -l app=web --for=condition=Ready --timeout=60s >/dev/null
  local phase node
  phase="$(k -n smoke get pod -l app=web -o jsonpath='{.items[0].status.phase}')"
  node="$(k -n smoke get pod -l app=web -o jsonpath='{.items[0].spec.nodeName}')"
  [[ "${phase}" == Running && "${node}" == kwok-node-* ]]
}
check "Deployment pod Running/Ready on a kwok node" deployment

crd() {
  k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.example.com
spec:
  group: smoke.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
EOF
  k wait crd/widgets.smoke.example.com --for=condition=Established --timeout=30s >/dev/null
  local i
  for ((i = 0; i < 50; i++)); do
    printf 'apiVersion: smoke.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: smoke}\nspec: {size: 3}\n' |
      k apply -f - >/dev/null 2>&1 && break
    sleep 0.2
  done
  [[ "$(k -n smoke get widget w1 -o jsonpath='{.spec.size}')" == 3 ]]
}
check "CRD Established and a custom object stored" crd

job() {
  k -n smoke create job once --image=registry.k8s.io/pause:3.10 >/dev/null
  k -n smoke wait job/once --for=condition=Complete --timeout=90s >/dev/null
}
check "Job Complete" job

pod_deletion() {
  k -n smoke delete deployment web --wait=true --timeout=60s >/dev/null
  local i
  for ((i = 0; i < 120; i++)); do
    [[ -z "$(k -n smoke get pods -l app=web -o name)" ]] && return 0
    sleep 0.5
  done
  return 1
}
check "pods of a deleted Deployment go away" pod_deletion

pids="${KUBE_ETCD_PID} ${KUBE_APISERVER_PID} ${KUBE_CONTROLLER_MANAGER_PID} ${KUBE_SCHEDULER_PID} ${KUBE_KWOK_PID}"
down() {
  "${TESTENV}/kube-down.sh" "${DIR}" 2>/dev/null
  local p
  for p in ${pids}; do
    [[ -e "/proc/${p}/exe" ]] && return 1
  done
  "${TESTENV}/kube-down.sh" "${DIR}" 2>/dev/null   # idempotent
}
check "kube-down.sh stops every process (and again is a no-op)" down
trap - EXIT

echo "${passed} passed, ${failed} failed"
if (( failed > 0 )); then
  echo "logs kept in ${DIR}" >&2
  exit 1
fi
if (( OWN_DIR )); then rm -rf "${DIR}"; fi
