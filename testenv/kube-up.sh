#!/usr/bin/env bash
# Starts a local Kubernetes control plane for tests, bound to 127.0.0.1 only:
#
#   etcd -> kube-apiserver -> kube-controller-manager, kube-scheduler, kwok
#
# plus KUBE_NODES (default 3) fake Nodes that kwok keeps Ready, so that
# Deployments get Running/Ready pods without any container runtime.
#
#   testenv/kube-up.sh DIR [PORT]
#
# DIR receives everything: pki/ (CA, serving and client certs, service-account
# key pair, token file), kubeconfig (admin, bearer token, system:masters),
# env (shell-sourceable: KUBECONFIG, URLs, pids), pids, *.log and etcd data.
# PORT is the apiserver's secure port (default: $KUBE_APISERVER_PORT or a free one).
# Prints the kubeconfig path on stdout; progress and timings go to stderr.
# Running it again on a DIR whose control plane is up only prints the path.
# Stop with testenv/kube-down.sh DIR.
#
# Environment:
#   KUBE_BIN_DIR          binaries (default: built/cached by testenv/install-kube.sh)
#   KUBE_APISERVER_PORT   apiserver port when PORT is not given
#   KUBE_NODES            number of fake nodes (default 3; 0 for none)
#   KUBE_WAIT_TIMEOUT     seconds to wait for each component (default 120)
#   KUBE_POD_CIDR_PREFIX  first two octets of the per-node pod CIDRs (default 127.64:
#                         node N gets 127.64.N.0/24, see testenv/kube/README.md)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ $# -lt 1 || $# -gt 2 || "$1" == -h || "$1" == --help ]]; then
  echo "usage: $0 DIR [PORT]" >&2
  exit 2
fi

START_NS="$(date +%s%N)"
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
PKI="${DIR}/pki"
REQ_PORT="${2:-${KUBE_APISERVER_PORT:-}}"
NODES="${KUBE_NODES:-3}"
WAIT="${KUBE_WAIT_TIMEOUT:-120}"
POD_PREFIX="${KUBE_POD_CIDR_PREFIX:-127.64}"
SERVICE_CIDR="10.96.0.0/12"

log() { echo "kube-up.sh: $*" >&2; }
elapsed() { local now; now="$(date +%s%N)"; printf '%d.%01d' $(((now - START_NS) / 1000000000)) $(((now - START_NS) / 100000000 % 10)); }

for tool in openssl curl base64; do
  command -v "${tool}" >/dev/null 2>&1 || { log "'${tool}' is required"; exit 1; }
done

# ---------------------------------------------------------------- processes --
# DIR/pids: one "name pid binary" line per process started, in start order.

# proc_alive PID BINARY: PID is alive (not a zombie) and runs BINARY, which
# guards against a pid reused by another program.
proc_alive() {
  local exe
  exe="$(readlink "/proc/$1/exe" 2>/dev/null)" || return 1
  [[ "${exe%% (deleted)}" == "$2" ]]
}

bin_of() { awk -v n="$1" '$1 == n { b = $3 } END { if (b != "") print b }' "${DIR}/pids" 2>/dev/null; }

pid_of() { awk -v n="$1" '$1 == n { p = $2 } END { if (p != "") print p }' "${DIR}/pids" 2>/dev/null; }

all_running() {
  [[ -s "${DIR}/pids" ]] || return 1
  local name pid bin
  while read -r name pid bin; do
    proc_alive "${pid}" "${bin}" || return 1
  done < "${DIR}/pids"
}

# start NAME BINARY ARGS...: runs BINARY detached from this shell, logging to
# DIR/NAME.log. The binary is recorded by its resolved path, which is what
# /proc/PID/exe shows.
start() {
  local name="$1" bin; bin="$(readlink -f "$2")"; shift 2
  nohup "${bin}" "$@" > "${DIR}/${name}.log" 2>&1 < /dev/null &
  echo "${name} $! ${bin}" >> "${DIR}/pids"
}

# fail MSG [LOG...]: reports, shows the end of the given logs, stops everything started.
fail() {
  local msg="$1"; shift
  log "ERROR: ${msg}"
  local f
  for f in "$@"; do
    if [[ -f "${f}" ]]; then
      log "---- last lines of ${f} ----"
      tail -n 25 "${f}" >&2 || true
    fi
  done
  log "logs: $(printf "%s " "${DIR}"/*.log)"
  "${HERE}/kube-down.sh" "${DIR}" >&2 || true
  exit 1
}

# wait_until WHAT NAME CMD...: polls CMD until it succeeds; fails early when the
# process NAME exits, and after KUBE_WAIT_TIMEOUT seconds.
wait_until() {
  local what="$1" name="$2"; shift 2
  local deadline=$((SECONDS + WAIT)) pid bin delay=0.1
  pid="$(pid_of "${name}")"
  bin="$(bin_of "${name}")"
  while ! "$@" >/dev/null 2>&1; do
    if [[ -n "${pid}" ]] && ! proc_alive "${pid}" "${bin}"; then
      fail "${name} exited while waiting for ${what}" "${DIR}/${name}.log"
    fi
    if (( SECONDS >= deadline )); then
      fail "timed out after ${WAIT}s waiting for ${what}" "${DIR}/${name}.log"
    fi
    sleep "${delay}"
    [[ "${delay}" == 0.1 ]] && delay=0.25 || delay=0.5
  done
  log "${what} ($(elapsed)s)"
}

# ------------------------------------------------------------- already up? --
if [[ -f "${DIR}/env" ]] && all_running; then
  # shellcheck disable=SC1091
  if (source "${DIR}/env" && curl -sf --max-time 5 --cacert "${KUBE_CA_FILE}" \
        -H "Authorization: Bearer ${KUBE_TOKEN}" "${KUBE_APISERVER_URL}/readyz" >/dev/null); then
    log "already running in ${DIR}"
    echo "${DIR}/kubeconfig"
    exit 0
  fi
fi
if [[ -s "${DIR}/pids" ]]; then
  log "stopping leftovers of a previous run in ${DIR}"
  "${HERE}/kube-down.sh" "${DIR}" >&2
fi
rm -f "${DIR}/pids" "${DIR}/env"

# ---------------------------------------------------------------- binaries --
if [[ -z "${KUBE_BIN_DIR:-}" ]]; then
  eval "$("${HERE}/install-kube.sh")"
fi
KUBE_VERSION="${KUBE_VERSION:-$("${KUBE_BIN_DIR}/kube-apiserver" --version 2>/dev/null | awk '{print $2}')}"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
  [[ -x "${KUBE_BIN_DIR}/${b}" ]] || { log "missing ${KUBE_BIN_DIR}/${b}; run testenv/install-kube.sh"; exit 1; }
done
KUBECTL="${KUBE_BIN_DIR}/kubectl"

# ------------------------------------------------------------------- ports --
PICKED=()
port_busy() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Htan "sport = :$1" 2>/dev/null)" ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}
# Ports below the kernel's ephemeral range, so no outgoing connection takes one between its pick
# and its bind.
EPHEMERAL_LOW="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
PORT_LOW=15000
PORT_SPAN=$((EPHEMERAL_LOW > PORT_LOW + 1000 ? EPHEMERAL_LOW - PORT_LOW : 10000))
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((PORT_LOW + (RANDOM * 32768 + RANDOM) % PORT_SPAN))
    [[ " ${PICKED[*]-} " == *" ${p} "* ]] && continue
    port_busy "${p}" && continue
    PICKED+=("${p}")
    echo "${p}"
    return 0
  done
  log "no free port found"
  exit 1
}
if [[ -n "${REQ_PORT}" ]]; then
  port_busy "${REQ_PORT}" && { log "port ${REQ_PORT} is already in use on 127.0.0.1"; exit 1; }
  API_PORT="${REQ_PORT}"; PICKED+=("${API_PORT}")
else
  API_PORT="$(free_port)"; PICKED+=("${API_PORT}")
fi
ETCD_PORT="$(free_port)"; PICKED+=("${ETCD_PORT}")
ETCD_PEER_PORT="$(free_port)"; PICKED+=("${ETCD_PEER_PORT}")
KCM_PORT="$(free_port)"; PICKED+=("${KCM_PORT}")
SCHED_PORT="$(free_port)"; PICKED+=("${SCHED_PORT}")
API_URL="https://127.0.0.1:${API_PORT}"
# The service-account issuer is the API server itself, whose OIDC discovery documents are served
# to anonymous callers (like EKS's public issuer), so an OIDC client such as OpenBao's JWT auth can
# verify service-account tokens through discovery.
ISSUER="${API_URL}"

# --------------------------------------------------------------------- pki --
mkdir -p "${PKI}"
chmod 700 "${PKI}"

# sign NAME SUBJECT EXTENSIONS [CA]: EC P-256 key + certificate signed by CA (default "ca").
sign() {
  local name="$1" subj="$2" ext="$3" ca="${4:-ca}"
  openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/${name}.key" 2>/dev/null
  openssl req -new -key "${PKI}/${name}.key" -subj "${subj}" -out "${PKI}/${name}.csr" 2>/dev/null
  printf '[ext]\n%s\n' "${ext}" > "${PKI}/${name}.ext"
  openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/${ca}.crt" -CAkey "${PKI}/${ca}.key" \
    -set_serial "0x$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')" -days 3650 -sha256 \
    -extfile "${PKI}/${name}.ext" -extensions ext -out "${PKI}/${name}.crt" 2>/dev/null
  rm -f "${PKI}/${name}.csr" "${PKI}/${name}.ext"
}

if [[ ! -s "${PKI}/ca.crt" || ! -s "${PKI}/front-proxy-client.crt" || ! -s "${PKI}/sa.pub" || ! -s "${PKI}/token" ]]; then
  log "generating certificates and keys in ${PKI}"
  rm -f "${PKI}"/*
  openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/ca.key" 2>/dev/null
  cat > "${PKI}/ca.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
x509_extensions = ca
[dn]
CN = engine-test-ca
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
EOF
  openssl req -x509 -new -key "${PKI}/ca.key" -config "${PKI}/ca.cnf" -days 3650 -sha256 \
    -out "${PKI}/ca.crt" 2>/dev/null
  # A second CA for the aggregation layer's front proxy (requestheader auth).
  openssl ecparam -name prime256v1 -genkey -noout -out "${PKI}/front-proxy-ca.key" 2>/dev/null
  sed 's/^CN = .*/CN = engine-test-front-proxy-ca/' "${PKI}/ca.cnf" > "${PKI}/front-proxy-ca.cnf"
  openssl req -x509 -new -key "${PKI}/front-proxy-ca.key" -config "${PKI}/front-proxy-ca.cnf" -days 3650 -sha256 \
    -out "${PKI}/front-proxy-ca.crt" 2>/dev/null
  rm -f "${PKI}/ca.cnf" "${PKI}/front-proxy-ca.cnf"

  client_ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
authorityKeyIdentifier=keyid"
  sign apiserver "/CN=kube-apiserver" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
authorityKeyIdentifier=keyid
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin "/O=system:masters/CN=kube-admin" "${client_ext}"
  sign front-proxy-client "/CN=front-proxy-client" "${client_ext}" front-proxy-ca
  sign controller-manager "/O=system:masters/CN=system:kube-controller-manager" "${client_ext}"
  sign scheduler "/CN=system:kube-scheduler" "${client_ext}"

  # Service-account token signing key pair.
  openssl genrsa -out "${PKI}/sa.key" 2048 2>/dev/null
  openssl rsa -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null

  od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "${PKI}/token"
  chmod 600 "${PKI}"/*.key "${PKI}/token"
fi
TOKEN="$(cat "${PKI}/token")"
printf '%s,kube-admin,kube-admin,"system:masters"\n' "${TOKEN}" > "${PKI}/tokens.csv"
chmod 600 "${PKI}/tokens.csv"

b64() { base64 -w0 < "$1"; }

# kubeconfig FILE USER_YAML
kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: engine-test
  cluster:
    server: ${API_URL}
    certificate-authority-data: $(b64 "${PKI}/ca.crt")
users:
- name: engine-test
  user:
$2
contexts:
- name: engine-test
  context:
    cluster: engine-test
    user: engine-test
current-context: engine-test
EOF
  chmod 600 "$1"
}
cert_user() {
  printf '    client-certificate-data: %s\n    client-key-data: %s' "$(b64 "${PKI}/$1.crt")" "$(b64 "${PKI}/$1.key")"
}
KUBECONFIG_FILE="${DIR}/kubeconfig"
kubeconfig "${KUBECONFIG_FILE}" "    token: ${TOKEN}"
kubeconfig "${PKI}/admin-cert.kubeconfig" "$(cert_user admin)"
kubeconfig "${PKI}/controller-manager.kubeconfig" "$(cert_user controller-manager)"
kubeconfig "${PKI}/scheduler.kubeconfig" "$(cert_user scheduler)"

# -------------------------------------------------------------------- etcd --
rm -rf "${DIR}/etcd"
start etcd "${KUBE_BIN_DIR}/etcd" \
  --name=default \
  --data-dir="${DIR}/etcd" \
  --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="default=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster-state=new \
  --heartbeat-interval=25 \
  --election-timeout=250 \
  --unsafe-no-fsync \
  --quota-backend-bytes=$((2 * 1024 * 1024 * 1024)) \
  --log-level=warn
etcd_healthy() { curl -sf --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health" | grep -q '"health":"true"'; }
wait_until "etcd healthy on 127.0.0.1:${ETCD_PORT}" etcd etcd_healthy

# ---------------------------------------------------------- kube-apiserver --
start kube-apiserver "${KUBE_BIN_DIR}/kube-apiserver" \
  --advertise-address=127.0.0.1 \
  --bind-address=127.0.0.1 \
  --secure-port="${API_PORT}" \
  --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
  --tls-cert-file="${PKI}/apiserver.crt" \
  --tls-private-key-file="${PKI}/apiserver.key" \
  --client-ca-file="${PKI}/ca.crt" \
  --token-auth-file="${PKI}/tokens.csv" \
  --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="${PKI}/front-proxy-client.crt" \
  --proxy-client-key-file="${PKI}/front-proxy-client.key" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer="${ISSUER}" \
  --service-account-key-file="${PKI}/sa.pub" \
  --service-account-signing-key-file="${PKI}/sa.key" \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --allow-privileged=true \
  --endpoint-reconciler-type=none \
  --enable-aggregator-routing=true \
  --profiling=false
api_ready() {
  [[ "$(curl -s --max-time 5 --cacert "${PKI}/ca.crt" -H "Authorization: Bearer ${TOKEN}" "${API_URL}/readyz")" == ok ]]
}
wait_until "kube-apiserver ready at ${API_URL}" kube-apiserver api_ready

# ------------------------------------------- controller-manager, scheduler --
start kube-controller-manager "${KUBE_BIN_DIR}/kube-controller-manager" \
  --kubeconfig="${PKI}/controller-manager.kubeconfig" \
  --authentication-kubeconfig="${PKI}/controller-manager.kubeconfig" \
  --authorization-kubeconfig="${PKI}/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${KCM_PORT}" \
  --leader-elect=false \
  --use-service-account-credentials=false \
  --service-account-private-key-file="${PKI}/sa.key" \
  --root-ca-file="${PKI}/ca.crt" \
  --cluster-signing-cert-file="${PKI}/ca.crt" \
  --cluster-signing-key-file="${PKI}/ca.key" \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --allocate-node-cidrs=false \
  --profiling=false
start kube-scheduler "${KUBE_BIN_DIR}/kube-scheduler" \
  --kubeconfig="${PKI}/scheduler.kubeconfig" \
  --authentication-kubeconfig="${PKI}/scheduler.kubeconfig" \
  --authorization-kubeconfig="${PKI}/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${SCHED_PORT}" \
  --leader-elect=false \
  --profiling=false

# -------------------------------------------------------------------- kwok --
cp "${HERE}/kube/kwok-stages.yaml" "${DIR}/kwok.yaml"
start kwok "${KUBE_BIN_DIR}/kwok" \
  --kubeconfig="${KUBECONFIG_FILE}" \
  --config="${DIR}/kwok.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip=127.0.0.1 \
  --cidr="${POD_PREFIX}.0.0/16" \
  --node-lease-duration-seconds=40

# --------------------------------------------------------------- fake nodes --
kc() { "${KUBECTL}" --kubeconfig="${KUBECONFIG_FILE}" --request-timeout=10s "$@"; }
node_manifest() {
  local i="$1" name="kwok-node-$1"
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${name}
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: ${name}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node-role.kubernetes.io/worker: ""
    node.kubernetes.io/instance-type: kwok-fake
    topology.kubernetes.io/region: local
    topology.kubernetes.io/zone: local-${i}
spec:
  podCIDR: ${POD_PREFIX}.${i}.0/24
  podCIDRs:
  - ${POD_PREFIX}.${i}.0/24
status:
  addresses:
  - type: InternalIP
    address: 127.0.1.${i}
  - type: Hostname
    address: ${name}
  capacity:
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 500Gi
    pods: "110"
  allocatable:
    cpu: "32"
    memory: 128Gi
    ephemeral-storage: 500Gi
    pods: "110"
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    osImage: kwok fake node
    kernelVersion: fake
    containerRuntimeVersion: fake://0
    kubeletVersion: ${KUBE_VERSION}
    kubeProxyVersion: ""
    machineID: ""
    systemUUID: ""
    bootID: ""
EOF
}
all_nodes() {
  local i
  for ((i = 1; i <= NODES; i++)); do echo "---"; node_manifest "${i}"; done
}
# Client-side apply creates missing nodes with their status (kept on create).
create_nodes() { (( NODES == 0 )) || all_nodes | kc apply -f - >/dev/null; }
wait_until "${NODES} kwok nodes created" kube-apiserver create_nodes

# ------------------------------------------------------------------ health --
component_healthy() { [[ "$(curl -sk --max-time 3 "https://127.0.0.1:$1/healthz")" == ok ]]; }
wait_until "kube-controller-manager healthy on 127.0.0.1:${KCM_PORT}" kube-controller-manager component_healthy "${KCM_PORT}"
wait_until "kube-scheduler healthy on 127.0.0.1:${SCHED_PORT}" kube-scheduler component_healthy "${SCHED_PORT}"
nodes_ready() {
  local n
  n="$(kc get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')"
  (( n >= NODES ))
}
wait_until "${NODES} kwok nodes Ready" kwok nodes_ready
# Pods can only be created once the service-account controller made the
# namespace's default ServiceAccount.
default_sa() { kc -n default get serviceaccount default; }
wait_until "default ServiceAccount present" kube-controller-manager default_sa
# Anonymous OIDC discovery (/.well-known/openid-configuration, /openid/v1/jwks).
discovery_public() {
  kc get clusterrolebinding oidc-discovery-anonymous >/dev/null 2>&1 ||
    kc create clusterrolebinding oidc-discovery-anonymous \
      --clusterrole=system:service-account-issuer-discovery --group=system:unauthenticated >/dev/null
}
wait_until "anonymous OIDC discovery allowed" kube-apiserver discovery_public

if ! all_running; then
  fail "a component exited during start-up" "${DIR}"/*.log
fi

# --------------------------------------------------------------------- env --
q() { printf '%q' "$1"; }
{
  echo "# Generated by testenv/kube-up.sh; source it to use the control plane."
  echo "export KUBECONFIG=$(q "${KUBECONFIG_FILE}")"
  echo "export KUBE_APISERVER_URL=$(q "${API_URL}")"
  echo "export KUBE_APISERVER_PORT=${API_PORT}"
  echo "export KUBE_TOKEN=$(q "${TOKEN}")"
  echo "export KUBE_CA_FILE=$(q "${PKI}/ca.crt")"
  echo "export KUBE_OIDC_ISSUER=$(q "${ISSUER}")"
  echo "export KUBE_ADMIN_CERT_KUBECONFIG=$(q "${PKI}/admin-cert.kubeconfig")"
  echo "export KUBE_ETCD_URL=http://127.0.0.1:${ETCD_PORT}"
  echo "export KUBE_BIN_DIR=$(q "${KUBE_BIN_DIR}")"
  echo "export KUBECTL=$(q "${KUBECTL}")"
  echo "export KUBE_VERSION=$(q "${KUBE_VERSION}")"
  echo "export KUBE_ETCD_PID=$(pid_of etcd)"
  echo "export KUBE_APISERVER_PID=$(pid_of kube-apiserver)"
  echo "export KUBE_CONTROLLER_MANAGER_PID=$(pid_of kube-controller-manager)"
  echo "export KUBE_SCHEDULER_PID=$(pid_of kube-scheduler)"
  echo "export KUBE_KWOK_PID=$(pid_of kwok)"
} > "${DIR}/env"

log "control plane up in $(elapsed)s: ${API_URL} (source ${DIR}/env; stop with testenv/kube-down.sh ${DIR})"
echo "${KUBECONFIG_FILE}"
