#!/usr/bin/env bash
# Stops the control plane that testenv/kube-up.sh started in DIR.
#
#   testenv/kube-down.sh DIR
#
# Only the processes recorded in DIR/pids are signalled (and only while the pid
# still runs the recorded binary), one at a time in reverse start order:
# SIGTERM, then SIGKILL if it is still alive after KUBE_STOP_TIMEOUT seconds
# (default 15).
# Removes DIR/pids, DIR/env and the etcd data; keeps pki/, kubeconfig and the
# logs. Idempotent: a DIR with nothing running is left as is, exit status 0.
set -euo pipefail

if [[ $# -ne 1 || "$1" == -h || "$1" == --help ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
if [[ ! -d "$1" ]]; then
  echo "kube-down.sh: $1 does not exist; nothing to stop" >&2
  exit 0
fi
DIR="$(cd "$1" && pwd)"
TIMEOUT="${KUBE_STOP_TIMEOUT:-15}"

log() { echo "kube-down.sh: $*" >&2; }

# owned PID BINARY: PID is alive (not a zombie) and still runs BINARY.
owned() {
  local exe
  exe="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1
  [[ "${exe%% (deleted)}" == "$2" ]]
}

names=(); pids=(); bins=()
if [[ -f "${DIR}/pids" ]]; then
  while read -r name pid bin; do
    [[ -n "${name}" && "${pid}" =~ ^[0-9]+$ ]] || continue
    names+=("${name}"); pids+=("${pid}"); bins+=("${bin}")
  done < "${DIR}/pids"
fi

if (( ${#pids[@]} == 0 )); then
  log "nothing to stop in ${DIR}"
else
  # One at a time, in reverse start order: the apiserver stops cleanly only
  # while etcd is still there.
  stopped=0
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    owned "${pids[i]}" "${bins[i]}" || continue
    kill -TERM "${pids[i]}" 2>/dev/null || true
    deadline=$((SECONDS + TIMEOUT))
    while owned "${pids[i]}" "${bins[i]}" && (( SECONDS < deadline )); do
      sleep 0.05
    done
    if owned "${pids[i]}" "${bins[i]}"; then
      log "${names[i]} (pid ${pids[i]}) did not stop after ${TIMEOUT}s; killing it"
      kill -KILL "${pids[i]}" 2>/dev/null || true
      for ((t = 0; t < 50; t++)); do owned "${pids[i]}" "${bins[i]}" || break; sleep 0.1; done
    fi
    stopped=$((stopped + 1))
  done
  log "stopped ${stopped} process(es) in ${DIR}"
fi

rm -f "${DIR}/pids" "${DIR}/env"
rm -rf "${DIR}/etcd"
