#!/usr/bin/env bash
# Builds the binaries of the local Kubernetes test control plane from the Go
# module proxy and caches them by version:
#
#   ~/.cache/engine/kube-<KUBE_VERSION>/bin/
#     kube-apiserver kube-controller-manager kube-scheduler kubectl   (k8s.io/kubernetes)
#     etcd                                                           (go.etcd.io/etcd/server/v3)
#     kwok                                                           (sigs.k8s.io/kwok)
#
# Versions are pinned in testenv/kube/versions.env. Idempotent: a binary that
# is already built for the pinned version is not rebuilt, so a second run only
# prints the paths.
#
# Output (stdout) is shell-sourceable:
#   eval "$(testenv/install-kube.sh)"   # sets KUBE_BIN_DIR, KUBE_APISERVER, ..., KWOK
# Progress and build times go to stderr (and to <prefix>/build-times.log).
#
# Environment:
#   KUBE_VERSION, ETCD_VERSION, KWOK_VERSION  override the pinned versions
#   KUBE_CACHE_DIR     cache root (default ~/.cache/engine)
#   KUBE_BUILD_JOBS    value for `go build -p` (default: Go's default; use 1 on a busy machine)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KUBE_SRC="${ROOT}/kube"
# shellcheck source=kube/versions.env
source "${KUBE_SRC}/versions.env"

CACHE_ROOT="${KUBE_CACHE_DIR:-${HOME}/.cache/engine}"
PREFIX="${CACHE_ROOT}/kube-${KUBE_VERSION}"
BIN="${PREFIX}/bin"

KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

log() { echo "install-kube.sh: $*" >&2; }

# stamp NAME -> the version string a cached binary must have been built for.
want_stamp() {
  case "$1" in
    etcd) echo "etcd ${ETCD_VERSION}" ;;
    kwok) echo "kwok ${KWOK_VERSION}" ;;
    *) echo "$1 ${KUBE_VERSION}" ;;
  esac
}

is_current() {
  local name="$1"
  [[ -x "${BIN}/${name}" && -f "${BIN}/.${name}.stamp" ]] &&
    [[ "$(cat "${BIN}/.${name}.stamp")" == "$(want_stamp "${name}")" ]]
}

print_paths() {
  echo "KUBE_VERSION=${KUBE_VERSION}"
  echo "ETCD_VERSION=${ETCD_VERSION}"
  echo "KWOK_VERSION=${KWOK_VERSION}"
  echo "KUBE_BIN_DIR=${BIN}"
  echo "KUBE_APISERVER=${BIN}/kube-apiserver"
  echo "KUBE_CONTROLLER_MANAGER=${BIN}/kube-controller-manager"
  echo "KUBE_SCHEDULER=${BIN}/kube-scheduler"
  echo "KUBECTL=${BIN}/kubectl"
  echo "ETCD=${BIN}/etcd"
  echo "KWOK=${BIN}/kwok"
}

missing=()
for name in "${KUBE_CMDS[@]}" etcd kwok; do
  is_current "${name}" || missing+=("${name}")
done
if (( ${#missing[@]} == 0 )); then
  print_paths
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  if [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:${PATH}"
  else
    log "the Go toolchain is required (Kubernetes ${KUBE_VERSION} needs go >= 1.26)"
    exit 1
  fi
fi

mkdir -p "${BIN}"
WORK="$(mktemp -d "${PREFIX}/build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -trimpath"
# Pinned sources must come from the module proxy, never from a local toolchain switch.
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
JOBS=()
if [[ -n "${KUBE_BUILD_JOBS:-}" ]]; then JOBS=(-p "${KUBE_BUILD_JOBS}"); fi

TIMES_LOG="${PREFIX}/build-times.log"

# build NAME CMD... : runs CMD niced, timing it, then stamps the binary.
build() {
  local name="$1"; shift
  local start end
  log "building ${name} ($(want_stamp "${name}"))"
  start="$(date +%s)"
  if ! nice -n 19 "$@" >&2; then
    log "building ${name} failed"
    exit 1
  fi
  end="$(date +%s)"
  test -x "${BIN}/${name}"
  want_stamp "${name}" > "${BIN}/.${name}.stamp"
  log "built ${name} in $((end - start))s"
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) ${name} $(want_stamp "${name}" | cut -d' ' -f2) $((end - start))s" >> "${TIMES_LOG}"
}

need() {
  local n
  for n in "${missing[@]}"; do [[ "${n}" == "$1" ]] && return 0; done
  return 1
}

# --- Kubernetes control plane + kubectl (wrapper module) ---------------------
kube_needed=0
for name in "${KUBE_CMDS[@]}"; do need "${name}" && kube_needed=1; done
if (( kube_needed )); then
  cp -r "${KUBE_SRC}/wrapper" "${WORK}/wrapper"
  if ! grep -qE "^[[:space:]]*k8s\.io/kubernetes ${KUBE_VERSION//./\\.}([[:space:]]|$)" "${WORK}/wrapper/go.mod"; then
    log "testenv/kube/wrapper is not for ${KUBE_VERSION}; regenerating it in ${WORK}/wrapper"
    "${KUBE_SRC}/gen-wrapper.sh" "${KUBE_VERSION}" "${WORK}/wrapper" >/dev/null
  fi
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
    ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean"
    ldflags+=" -X ${pkg}.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  for name in "${KUBE_CMDS[@]}"; do
    need "${name}" || continue
    build "${name}" env -C "${WORK}/wrapper" go build "${JOBS[@]}" -ldflags "${ldflags}" -o "${BIN}/${name}" "k8s.io/kubernetes/cmd/${name}"
  done
fi

# --- etcd (testenv/kube/etcd: etcdmain.Main) ---------------------------------
if need etcd; then
  cp -r "${KUBE_SRC}/etcd" "${WORK}/etcd"
  if ! grep -qE "^require go\.etcd\.io/etcd/server/v3 ${ETCD_VERSION//./\\.}$" "${WORK}/etcd/go.mod"; then
    log "testenv/kube/etcd is not for ${ETCD_VERSION}; re-pinning it in ${WORK}/etcd"
    (cd "${WORK}/etcd" && go mod edit -require "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" && go mod tidy) >&2
  fi
  build etcd env -C "${WORK}/etcd" go build "${JOBS[@]}" -ldflags "-s -w" -o "${BIN}/etcd" .
fi

# --- kwok (plain go install of the released module) --------------------------
if need kwok; then
  build kwok env GOBIN="${BIN}" go install "${JOBS[@]}" -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
fi

print_paths
