#!/usr/bin/env bash
# A single-node Kubernetes cluster for the project's tests, built from the Go
# module proxy and Debian packages alone.
#
#   .ci/cluster.sh build    build the Kubernetes binaries, containerd 2, gVisor
#                           (runsc and its containerd shim, .ci/gvisor.sh) and a
#                           pause binary into the cache (cold: 15-20 min on 2
#                           cores; cached: seconds)
#   .ci/cluster.sh up       start etcd, containerd, kube-apiserver, the controller
#                           manager, the scheduler and a kubelet under the state
#                           directory, import the project's images, create the
#                           RuntimeClass gvisor and wait for the node to be Ready
#   .ci/cluster.sh down     stop what `up` started (by PID) and clean up its mounts,
#                           network namespaces and cgroups; safe to repeat
#   .ci/cluster.sh env      print the shell exports a client needs
#   .ci/cluster.sh status   show which of the cluster's processes run
#   .ci/cluster.sh node-stop   kill the kubelet (SIGKILL), as a node that dies:
#                              its containers run on, and nothing reports them
#   .ci/cluster.sh node-start  start the kubelet again (fault tests)
#
# Every daemon is a separate instance with its own socket, port, root and
# cgroup parent: the machine's Docker daemon and its containerd are never
# restarted, reconfigured or addressed, except for `docker save` of the
# project's images. Runs as root (containerd and kubelet need it). The
# configuration templates live in .ci/cluster/.
#
# The cluster: one node named localhost, whose containerd (2.x, built here:
# gVisor's shim speaks only its protocol) runs pods with runc by default and
# with gVisor's runsc under the RuntimeClass gvisor. Pods get loopback and an
# eth0 on a bridge that has no address, gateway or masquerading: nothing
# beyond the node is reachable, pods on the node can reach one another, and
# no NetworkPolicy is enforced; a gVisor pod has loopback alone. Clients authenticate with certificates (the
# administrator's kubeconfig is STATE/kubeconfig); authorization is Node,RBAC.
#
# Environment:
#   STRICTGRADE_CACHE         cache root (default ~/.cache/strictgrade)
#   STRICTGRADE_CLUSTER_DIR   state directory (default /tmp/strictgrade-cluster)
#   STRICTGRADE_CLUSTER_WAIT  seconds `up` waits for each component (default 120)
#   STRICTGRADE_CLUSTER_EVENTED_PLEG=1
#                             turn on the kubelet's EventedPLEG (alpha in 1.37):
#                             it learns of container starts and exits from
#                             containerd's events instead of a relist every
#                             second (ADR 0015 has what that changes); CI
#                             leaves it off
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"

HERE=$(cd "$(dirname "$0")" && pwd)
CONF=$HERE/cluster

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
CONTAINERD_VERSION=v2.4.2
GO_VERSION=go1.26.8
# The scheduler places pods that name no node; the controller manager runs only
# the controllers a namespace's life needs (service accounts, namespace
# deletion, owner-reference garbage collection).
K8S_COMMANDS="kube-apiserver kubelet kube-scheduler kube-controller-manager"

CACHE=${STRICTGRADE_CACHE:-$HOME/.cache/strictgrade}
KDIR=$CACHE/k8s-$K8S_VERSION
BIN=$KDIR/bin
CDIR=$CACHE/containerd-$CONTAINERD_VERSION
CBIN=$CDIR/bin
CONTAINERD_COMMANDS="containerd containerd-shim-runc-v2 ctr"
CTR=$CBIN/ctr
STATE=${STRICTGRADE_CLUSTER_DIR:-/tmp/strictgrade-cluster}
WAIT=${STRICTGRADE_CLUSTER_WAIT:-120}

# Ports and names, chosen away from the defaults so that nothing collides
# with a cluster or daemon the machine may already run.
ETCD_PORT=12379
ETCD_PEER_PORT=12380
APISERVER_PORT=16443
KUBELET_PORT=11250
KUBELET_HEALTHZ_PORT=11248
NODE=localhost
# The node's address: the API server's node proxy (nodes/NAME/proxy, which
# the backend reads each pod's CPU time through) refuses loopback
# addresses, so the kubelet serves on an address of a link of its own (a
# bridge with no ports: this kernel has no dummy links), from the
# benchmarking range (RFC 2544), which nothing routes.
NODE_LINK=sgnode0
NODE_IP=198.18.0.2
NAMESPACE=strictgrade
# More namespaces for clients that share the cluster at the same time (CI
# runs four parts side by side): tests that delete pods from outside or
# count what is left look at their own namespace only.
NAMESPACE2=strictgrade-2
NAMESPACE3=strictgrade-3
NAMESPACE4=strictgrade-4
BRIDGE=sgk8s0
POD_SUBNET=10.88.0.0/24
SERVICE_RANGE=10.0.0.0/24
CGROUP_PARENT=strictgrade-kubepods
PAUSE_IMAGE=strictgrade.local/pause:1
# gVisor pods: the RuntimeClass and the containerd handler it names.
GVISOR_CLASS=gvisor
GVISOR_HANDLER=runsc
# Process limits (containerd.toml, kubelet.yaml): a container's pids cgroup
# under runc; RLIMIT_NPROC under gVisor, whose kernel enforces it; and the
# pod's host processes, a backstop sized for gVisor's own threads.
RUNC_PIDS=32
GVISOR_NPROC=64
POD_PIDS=$((32 + 4 * GVISOR_NPROC))
PROJECT_IMAGES="strictgrade/python strictgrade/judge strictgrade/loader strictgrade/probe"

# The daemons `up` starts, in order.
COMPONENTS="etcd containerd apiserver controller-manager scheduler kubelet"

log() { printf '[cluster %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------- build

# stamp describes what the cached binaries were built from; a change in any
# part of it rebuilds them.
stamp() {
  printf 'kubernetes %s staging %s %s commands %s pause %s\n' "$K8S_VERSION" "$STAGING_VERSION" "$GO_VERSION" \
    "$(echo $K8S_COMMANDS | tr ' ' ,)" \
    "$(sha256sum "$CONF/pause.go" | cut -c1-16)"
}

cached() {
  [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$(stamp)" ] || return 1
  local b
  for b in $K8S_COMMANDS pause; do [ -x "$BIN/$b" ] || return 1; done
  [ -f "$KDIR/pause-image.tar" ] && containerd_cached && gvisor_cached
}

containerd_cached() {
  local b
  for b in $CONTAINERD_COMMANDS; do [ -x "$CBIN/$b" ] || return 1; done
  [ "$(cat "$CBIN/.stamp" 2>/dev/null)" = "containerd $CONTAINERD_VERSION $GO_VERSION" ]
}

# GDIR: where .ci/gvisor.sh keeps runsc and containerd-shim-runsc-v1.
GDIR=$(bash "$HERE/gvisor.sh" path)
gvisor_cached() { [ -x "$GDIR/runsc" ] && [ -x "$GDIR/containerd-shim-runsc-v1" ]; }

# build_containerd: containerd 2 (the daemon, its runc shim and ctr) from
# the Go module proxy, without the snapshotters that need cgo.
build_containerd() {
  if containerd_cached; then
    log "containerd $CONTAINERD_VERSION is cached in $CBIN"
    return 0
  fi
  local t0=$SECONDS src=$CDIR/src out=$CDIR/bin.new m=github.com/containerd/containerd/v2
  rm -rf "$out" && mkdir -p "$src" "$out"
  printf 'module strictgrade.local/containerdbuild\n\ngo 1.26.0\n' >"$src/go.mod"
  rm -f "$src/go.sum"
  log "fetching $m@$CONTAINERD_VERSION"
  (cd "$src" && go get $(for c in $CONTAINERD_COMMANDS; do echo "$m/cmd/$c@$CONTAINERD_VERSION"; done)) \
    >"$CDIR/go-get.log" 2>&1 || { tail -20 "$CDIR/go-get.log" >&2; die "go get failed (log: $CDIR/go-get.log)"; }
  log "building $CONTAINERD_COMMANDS"
  (cd "$src" && exec go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
    -ldflags="-s -w -X $m/version.Version=$CONTAINERD_VERSION" -o "$out/" \
    $(for c in $CONTAINERD_COMMANDS; do echo "$m/cmd/$c"; done)) &
  heartbeat $! "building containerd" || die "building containerd failed"
  "$out/containerd" --version | grep -qF "$CONTAINERD_VERSION" || die "the built containerd does not report $CONTAINERD_VERSION"
  echo "containerd $CONTAINERD_VERSION $GO_VERSION" >"$out/.stamp"
  rm -rf "$CBIN" && mv "$out" "$CBIN"
  log "containerd $CONTAINERD_VERSION built into $CBIN in $((SECONDS - t0)) s"
}

# heartbeat PID WHAT: print elapsed time while PID runs, return its status.
heartbeat() {
  local pid=$1 what=$2 start=$SECONDS next=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      log "  still $what ($((SECONDS - start)) s)"
      next=$((next + 60))
    fi
  done
  wait "$pid"
}

build() {
  command -v go >/dev/null || die "no go on PATH (want $GO_VERSION)"
  local have; have=$(go env GOVERSION)
  [ "$have" = "$GO_VERSION" ] || die "go is $have, the cluster is built with $GO_VERSION"
  mkdir -p "$KDIR"
  exec 9>"$KDIR/.lock"
  flock 9
  export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
  # The compiler collects its garbage a quarter as often: a sixth or so
  # less CPU for the same build (docs/benchmarks.md), for a larger heap,
  # which these machines can spare. The build alone: the daemons `up`
  # starts keep Go's default.
  local -x GOGC=${STRICTGRADE_BUILD_GOGC:-400}
  build_containerd
  log "gVisor: runsc and its containerd shim (.ci/gvisor.sh build)"
  bash "$HERE/gvisor.sh" build || die "building gVisor failed"
  if cached; then
    log "Kubernetes $K8S_VERSION binaries are cached in $BIN"
    return 0
  fi
  local t0=$SECONDS src=$KDIR/src out=$KDIR/bin.new
  rm -rf "$out" && mkdir -p "$src" "$out"

  # A scratch module outside the repository: k8s.io/kubernetes refers to its
  # staging modules by relative replace directives that do not survive as a
  # dependency, so every one of them is pinned to its published version.
  log "fetching k8s.io/kubernetes@$K8S_VERSION"
  local gomod
  gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || die "go mod download did not report k8s.io/kubernetes's go.mod"
  local staging
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod" | sort -u)
  [ -n "$staging" ] || die "found no staging modules in $gomod"
  {
    printf 'module strictgrade.local/k8sbuild\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
    printf '\t%s => %s '"$STAGING_VERSION"'\n' $(for m in $staging; do echo "$m $m"; done)
    printf ')\n'
  } >"$src/go.mod"
  rm -f "$src/go.sum"
  log "pinned $(echo "$staging" | wc -l) staging modules to $STAGING_VERSION; resolving dependencies"
  (cd "$src" && go get $(for c in $K8S_COMMANDS; do echo "k8s.io/kubernetes/cmd/$c@$K8S_VERSION"; done)) \
    >"$KDIR/go-get.log" 2>&1 || { tail -20 "$KDIR/go-get.log" >&2; die "go get failed (log: $KDIR/go-get.log)"; }
  log "dependencies resolved in $((SECONDS - t0)) s"

  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local vpkg=k8s.io/component-base/version
  local ldflags="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
  local t1=$SECONDS
  log "building $K8S_COMMANDS (about 10-15 min cold on 2 cores)"
  (cd "$src" && exec go build -trimpath -ldflags="$ldflags" -o "$out/" \
    $(for c in $K8S_COMMANDS; do echo "k8s.io/kubernetes/cmd/$c"; done)) &
  heartbeat $! "building" || die "building $K8S_COMMANDS failed"
  log "built $K8S_COMMANDS in $((SECONDS - t1)) s"

  log "building the pause binary and image"
  mkdir -p "$KDIR/pause-src"
  cp "$CONF/pause.go" "$KDIR/pause-src/main.go"
  printf 'module strictgrade.local/pause\n\ngo 1.26.0\n' >"$KDIR/pause-src/go.mod"
  (cd "$KDIR/pause-src" && go build -trimpath -ldflags='-s -w' -o "$out/pause" .)
  pause_image "$out/pause" "$KDIR/pause-image.tar.new"

  local v
  v=$("$out/kube-apiserver" --version) || die "the built kube-apiserver does not run"
  [ "$v" = "Kubernetes $K8S_VERSION" ] || die "the built kube-apiserver reports '$v', want 'Kubernetes $K8S_VERSION'"
  stamp >"$out/.stamp"
  rm -rf "$BIN" && mv "$out" "$BIN"
  mv "$KDIR/pause-image.tar.new" "$KDIR/pause-image.tar"
  log "Kubernetes $K8S_VERSION built into $BIN in $((SECONDS - t0)) s"
}

# pause_image BINARY OUT: a one-layer image in the `docker save` layout that
# `ctr images import` reads, holding BINARY as /pause; no registry involved.
pause_image() {
  local w; w=$(mktemp -d)
  mkdir "$w/root"
  install -m 0755 "$1" "$w/root/pause"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/root" -cf "$w/layer.tar" pause
  local diff; diff=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  mkdir "$w/$diff" && mv "$w/layer.tar" "$w/$diff/layer.tar"
  local config
  config=$(printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$diff")
  local id; id=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" >"$w/$id.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$id" "$PAUSE_IMAGE" "$diff" >"$w/manifest.json"
  tar -C "$w" -cf "$2" manifest.json "$id.json" "$diff"
  rm -rf "$w"
}


# ---------------------------------------------------------------- up

SOCK=$STATE/containerd/containerd.sock
PKI=$STATE/pki
NETWORK=strictgrade-k8s
CNI_CACHE=/var/lib/cni/results

# render TEMPLATE OUT: fill the @NAME@ placeholders of a config under .ci/cluster.
render() {
  sed -e "s|@STATE@|$STATE|g" -e "s|@PAUSE_IMAGE@|$PAUSE_IMAGE|g" -e "s|@NETWORK@|$NETWORK|g" \
    -e "s|@BRIDGE@|$BRIDGE|g" -e "s|@POD_SUBNET@|$POD_SUBNET|g" -e "s|@CGROUP_PARENT@|$CGROUP_PARENT|g" \
    -e "s|@KUBELET_PORT@|$KUBELET_PORT|g" -e "s|@NODE_IP@|$NODE_IP|g" -e "s|@KUBELET_HEALTHZ_PORT@|$KUBELET_HEALTHZ_PORT|g" \
    -e "s|@GVISOR_HANDLER@|$GVISOR_HANDLER|g" -e "s|@RUNSC@|$GDIR/runsc|g" -e "s|@POD_PIDS@|$POD_PIDS|g" \
    "$CONF/$1" >"$2"
  if grep -n '@[A-Z_]*@' "$2" >&2; then die "unfilled placeholder in $2"; fi
}

# pid_of NAME: the PID of a running component `up` started, or nothing. A
# recorded PID counts only while its command line still names the state
# directory, so a recycled PID is never taken for ours.
pid_of() {
  local f=$STATE/pids/$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  [ -r "/proc/$pid/cmdline" ] || return 0
  if tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qF "$STATE"; then echo "$pid"; fi
}

# start NAME COMMAND...: run a daemon in its own session, log to the state
# directory and record its PID for `down`.
# The components run at niceness -5 (their sessions' autogroups too), as a
# node reserves CPU for its kubelet and runtime (kubeReserved): on this
# machine the test suite and the Docker lanes share the two cores with
# the cluster, and a starved kubelet took more than a minute to start a
# pod. The pods' processes inherit it, which changes nothing within the
# cgroups they run in.
COMPONENT_NICE=-5
start() {
  local name=$1; shift
  setsid "$@" </dev/null >"$STATE/logs/$name.log" 2>&1 &
  local pid=$! i
  echo "$pid" >"$STATE/pids/$name"
  renice -n "$COMPONENT_NICE" -p "$pid" >/dev/null 2>&1 || true
  echo "$COMPONENT_NICE" >"/proc/$pid/autogroup" 2>/dev/null || true
  # Until the child has exec'd the component, its command line is this
  # script's, which names no state directory, and pid_of would take the
  # component for one that has exited (a CI run on a loaded machine
  # stopped `up` that way): wait for the exec, or for the child to end.
  for i in $(seq 1 200); do
    [ -r "/proc/$pid/cmdline" ] || break
    tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qF "$STATE" && break
    sleep 0.05
  done
}

# wait_for NAME WHAT COMMAND...: poll COMMAND until it succeeds; fail with the
# end of NAME's log when NAME exits or STRICTGRADE_CLUSTER_WAIT runs out.
wait_for() {
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + WAIT))
  until "$@" >/dev/null 2>&1; do
    if [ -z "$(pid_of "$name")" ]; then
      tail -n 25 "$STATE/logs/$name.log" >&2 || true
      die "$name exited while waiting for $what (log: $STATE/logs/$name.log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 25 "$STATE/logs/$name.log" >&2 || true
      die "timed out after ${WAIT}s waiting for $what (log: $STATE/logs/$name.log)"
    fi
    sleep 0.2
  done
}

# api METHOD PATH [BODY]: call the apiserver as the cluster's administrator.
api() {
  local args=(-sS --fail-with-body --max-time 10 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key"
    -X "$1" "https://127.0.0.1:$APISERVER_PORT$2")
  if [ $# -ge 3 ]; then args+=(-H 'Content-Type: application/json' --data-binary "$3"); fi
  curl "${args[@]}"
}

apiserver_ready() { [ "$(api GET /readyz 2>/dev/null)" = ok ]; }

node_ready() {
  api GET "/api/v1/nodes/$NODE" | jq -e '.status.conditions[] | select(.type == "Ready") | .status == "True"' | grep -qx true
}

service_account_exists() { api GET "/api/v1/namespaces/$1/serviceaccounts/default" >/dev/null; }

# issue NAME SUBJECT USAGE [SAN]: a key and a certificate signed by the cluster's CA.
issue() {
  local name=$1 subject=$2 usage=$3 san=${4:-}
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr" 2>/dev/null
  {
    echo "keyUsage = critical, digitalSignature, keyEncipherment"
    echo "extendedKeyUsage = $usage"
    if [ -n "$san" ]; then echo "subjectAltName = $san"; fi
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 30 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null || die "could not sign the $name certificate"
}

certificates() {
  mkdir -p "$PKI" && chmod 700 "$PKI"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=strictgrade-test-cluster-ca" -days 30 \
    -addext "basicConstraints = critical, CA:TRUE" -addext "keyUsage = critical, keyCertSign, cRLSign" \
    -out "$PKI/ca.crt" 2>/dev/null || die "could not make the cluster's CA"
  issue apiserver "/CN=kube-apiserver" serverAuth \
    "IP:127.0.0.1, IP:${SERVICE_RANGE%.0/*}.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc"
  issue kubelet-serving "/CN=$NODE" serverAuth "IP:127.0.0.1, IP:$NODE_IP, DNS:$NODE"
  issue admin "/O=system:masters/CN=strictgrade-admin" clientAuth
  issue kubelet "/O=system:nodes/CN=system:node:$NODE" clientAuth
  issue apiserver-kubelet "/CN=kube-apiserver-kubelet-client" clientAuth
  issue scheduler "/CN=system:kube-scheduler" clientAuth
  # The controllers below delete whatever a namespace holds: they act as
  # administrators rather than through per-controller service accounts.
  issue controller-manager "/O=system:masters/CN=system:kube-controller-manager" clientAuth
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/service-accounts.key" 2>/dev/null
  openssl ec -in "$PKI/service-accounts.key" -pubout -out "$PKI/service-accounts.pub" 2>/dev/null
}

# kubeconfig NAME OUT: a kubeconfig that authenticates with NAME's certificate,
# with everything embedded so that the file can be copied elsewhere.
kubeconfig() {
  cat >"$2" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: strictgrade
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$1.crt")
    client-key-data: $(base64 -w0 "$PKI/$1.key")
contexts:
- name: strictgrade
  context:
    cluster: strictgrade
    user: $1
    namespace: $NAMESPACE
current-context: strictgrade
KUBECONFIG
  chmod 600 "$2"
}

# cgroup_mounts: the mount points of every cgroup hierarchy (v1 and v2).
cgroup_mounts() { awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts; }

# cgroup_parent: the pods' parent cgroup in every hierarchy; a fresh cpuset
# cgroup holds no CPUs or memory nodes until given its parent's.
cgroup_parent() {
  local m
  for m in $(cgroup_mounts); do
    mkdir -p "$m/$CGROUP_PARENT"
    if [ -f "$m/cpuset.cpus" ] && [ -f "$m/$CGROUP_PARENT/cpuset.cpus" ]; then
      cat "$m/cpuset.cpus" >"$m/$CGROUP_PARENT/cpuset.cpus"
      cat "$m/cpuset.mems" >"$m/$CGROUP_PARENT/cpuset.mems"
    fi
  done
}

preflight() {
  [ "$(id -u)" = 0 ] || die "must run as root (containerd and the kubelet need it)"
  local need="etcd:etcd-server runc:runc /usr/lib/cni/bridge:containernetworking-plugins
    /usr/lib/cni/host-local:containernetworking-plugins /usr/lib/cni/loopback:containernetworking-plugins
    openssl:openssl curl:curl jq:jq ss:iproute2 docker:docker.io"
  local item missing=
  for item in $need; do
    command -v "${item%%:*}" >/dev/null 2>&1 || missing="$missing ${item#*:}"
  done
  [ -z "$missing" ] || die "missing Debian packages:$(echo "$missing" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
  cached || die "no built binaries in $BIN, $CBIN or $GDIR: run '$0 build' first"
  local port busy=
  for port in $ETCD_PORT $ETCD_PEER_PORT $APISERVER_PORT $KUBELET_PORT $KUBELET_HEALTHZ_PORT; do
    if ss -Htln "sport = :$port" | grep -q .; then busy="$busy $port"; fi
  done
  [ -z "$busy" ] || die "ports in use on this machine:$busy"
}

# fresh_state: an empty state directory; leftovers of an earlier cluster that
# was never brought down are cleaned up first.
fresh_state() {
  case "$STATE" in
    /*) ;;
    *) die "STRICTGRADE_CLUSTER_DIR must be an absolute path, not '$STATE'" ;;
  esac
  [ "$STATE" != / ] || die "STRICTGRADE_CLUSTER_DIR must not be /"
  if [ -d "$STATE" ] && [ -n "$(ls -A "$STATE")" ]; then
    [ -f "$STATE/.strictgrade-cluster" ] || die "$STATE is not empty and was not made by this script"
    local c
    for c in $COMPONENTS; do
      [ -z "$(pid_of "$c")" ] || die "a cluster is running under $STATE ($c); run '$0 down' first"
    done
    down
    rm -rf "$STATE"
  fi
  mkdir -p "$STATE"/{logs,pids,containerd,cni/net.d,cni/ipam,kubelet,pod-logs,runc,runsc}
  touch "$STATE/.strictgrade-cluster"
}

import_images() {
  # ctr's own warnings (containerd 2 on cgroup v1) go to a log, shown when
  # an import fails.
  local ilog=$STATE/logs/ctr-import.log
  "$CTR" -a "$SOCK" -n k8s.io images import --snapshotter overlayfs "$KDIR/pause-image.tar" >/dev/null 2>>"$ilog" ||
    { cat "$ilog" >&2; die "could not import the pause image"; }
  local image found=
  for image in $PROJECT_IMAGES; do
    if [ -z "$(docker images -q "$image")" ]; then
      log "  $image: not built here, skipped"
      continue
    fi
    local t=$SECONDS
    docker save "$image" | "$CTR" -a "$SOCK" -n k8s.io images import --snapshotter overlayfs - >/dev/null 2>>"$ilog" ||
      { cat "$ilog" >&2; die "could not import $image"; }
    log "  $image: imported in $((SECONDS - t)) s ($(docker images --format '{{.Tag}}' "$image" | tr '\n' ' '))"
    found=1
  done
  [ -n "$found" ] || log "  no strictgrade image is built yet; pods can use only imported images"
}

# base_specs: the OCI specs containerd starts each handler's containers
# from: its own default, with no rlimits of its own (as without a base spec)
# but for the process limit of the handler.
base_specs() {
  local spec
  spec=$("$CTR" oci spec 2>/dev/null) || die "ctr oci spec failed"
  jq --argjson n "$RUNC_PIDS" '.process.rlimits = [] | .linux.resources.pids = {limit: $n}' <<<"$spec" >"$STATE/base-runc.json"
  jq --argjson n "$GVISOR_NPROC" '.process.rlimits = [{type: "RLIMIT_NPROC", hard: $n, soft: $n}]' <<<"$spec" >"$STATE/base-runsc.json"
}

start_kubelet() {
  # The sandbox seccomp profile (ADR 0020), where the pods' Localhost
  # profile (sandbox/kubernetes.DefaultSeccompProfile) points: under the
  # kubelet's root, seccomp/strictgrade/ and the profile's versioned name
  # (internal/seccomp.Name).
  mkdir -p "$STATE/kubelet/seccomp/strictgrade"
  cp "$HERE/../internal/seccomp/profile.json" "$STATE/kubelet/seccomp/strictgrade/strictgrade-sandbox-v1.json"
  node_link
  start kubelet "$BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --hostname-override="$NODE" --node-ip="$NODE_IP"
}

# node_link: the link that holds the node's address (NODE_IP).
node_link() {
  if ! ip link show "$NODE_LINK" >/dev/null 2>&1; then
    ip link add "$NODE_LINK" type bridge || die "could not add the node's link $NODE_LINK"
  fi
  ip addr replace "$NODE_IP/32" dev "$NODE_LINK" || die "could not give $NODE_LINK the address $NODE_IP"
  ip link set "$NODE_LINK" up || die "could not bring $NODE_LINK up"
}

# node_stop: the node dies as far as the cluster can tell: its kubelet is
# killed at once, with no chance to report anything.
node_stop() {
  local pid; pid=$(pid_of kubelet)
  [ -n "$pid" ] || die "no kubelet runs under $STATE"
  kill -KILL "$pid"
  rm -f "$STATE/pids/kubelet"
  log "killed the kubelet ($pid)"
}

node_start() {
  [ -f "$STATE/kubelet.yaml" ] || die "no cluster under $STATE (run '$0 up')"
  [ -z "$(pid_of kubelet)" ] || die "the kubelet runs already"
  start_kubelet
  wait_for kubelet "node $NODE to be Ready" node_ready
  log "kubelet back, node $NODE Ready"
}

up() {
  local t0=$SECONDS
  preflight
  fresh_state
  certificates
  kubeconfig admin "$STATE/kubeconfig"
  kubeconfig kubelet "$STATE/kubelet.kubeconfig"
  kubeconfig scheduler "$STATE/scheduler.kubeconfig"
  kubeconfig controller-manager "$STATE/controller-manager.kubeconfig"
  render containerd.toml "$STATE/containerd.toml"
  render runsc.toml "$STATE/runsc.toml"
  base_specs
  render cni.conflist "$STATE/cni/net.d/10-$NETWORK.conflist"
  render kubelet.yaml "$STATE/kubelet.yaml"
  if [ "${STRICTGRADE_CLUSTER_EVENTED_PLEG:-0}" = 1 ]; then
    printf '  EventedPLEG: true\n' >>"$STATE/kubelet.yaml"
  fi
  render scheduler.yaml "$STATE/scheduler.yaml"
  cgroup_parent

  log "etcd on 127.0.0.1:$ETCD_PORT"
  start etcd etcd --name strictgrade --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "strictgrade=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_for etcd "etcd to be healthy" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  log "containerd on $SOCK"
  # containerd finds its shims on its PATH: its own runc shim and gVisor's,
  # never the machine's (Debian's containerd 1.6 ships a runc shim too).
  PATH="$CBIN:$GDIR:$PATH" start containerd "$CBIN/containerd" --config "$STATE/containerd.toml"
  wait_for containerd "containerd to answer" "$CTR" -a "$SOCK" version

  log "kube-apiserver on 127.0.0.1:$APISERVER_PORT"
  start apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --cert-dir="$STATE/apiserver" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --anonymous-auth=false \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-cluster-ip-range="$SERVICE_RANGE" --endpoint-reconciler-type=none \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$PKI/service-accounts.pub" \
    --service-account-signing-key-file="$PKI/service-accounts.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet.crt" --kubelet-client-key="$PKI/apiserver-kubelet.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --feature-gates=PodLogsQuerySplitStreams=true \
    --profiling=false
  wait_for apiserver "the apiserver to be ready" apiserver_ready

  log "importing images into containerd"
  import_images

  log "kube-controller-manager and kube-scheduler"
  start controller-manager "$BIN/kube-controller-manager" --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --controllers=serviceaccount-controller,namespace-controller,garbage-collector-controller,node-lifecycle-controller,root-ca-certificate-publisher-controller \
    --root-ca-file="$PKI/ca.crt" --use-service-account-credentials=false \
    --leader-elect=false --secure-port=0 --profiling=false
  start scheduler "$BIN/kube-scheduler" --config="$STATE/scheduler.yaml" --secure-port=0 --profiling=false

  log "kubelet (node $NODE, $NODE_IP:$KUBELET_PORT)"
  start_kubelet
  wait_for kubelet "node $NODE to be Ready" node_ready

  local ns
  for ns in "$NAMESPACE" "$NAMESPACE2" "$NAMESPACE3" "$NAMESPACE4"; do
    api POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" >/dev/null ||
      die "could not create namespace $ns"
  done
  api POST /apis/node.k8s.io/v1/runtimeclasses \
    "{\"apiVersion\":\"node.k8s.io/v1\",\"kind\":\"RuntimeClass\",\"metadata\":{\"name\":\"$GVISOR_CLASS\"},\"handler\":\"$GVISOR_HANDLER\"}" >/dev/null ||
    die "could not create the RuntimeClass $GVISOR_CLASS"
  for ns in "$NAMESPACE" "$NAMESPACE2" "$NAMESPACE3" "$NAMESPACE4"; do
    wait_for controller-manager "the default ServiceAccount in $ns" service_account_exists "$ns"
  done
  wait_for controller-manager "the default ServiceAccount in default" service_account_exists default
  local c
  for c in $COMPONENTS; do
    [ -n "$(pid_of "$c")" ] || die "$c is no longer running (log: $STATE/logs/$c.log)"
  done
  log "cluster up in $((SECONDS - t0)) s; KUBECONFIG=$STATE/kubeconfig"
}

# ---------------------------------------------------------------- down

# stop NAME: TERM, then KILL after a grace period.
stop() {
  local pid; pid=$(pid_of "$1")
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$1 ($pid) ignored SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
    log "stopped $1 ($pid)"
  fi
  rm -f "$STATE/pids/$1"
}

# shims: the PIDs of containerd shims that serve this cluster's containerd
# (they name its socket as an argument; the machine's own shims name another).
shims() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in containerd-shim*) ;; *) continue ;; esac
    tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF "$SOCK" && echo "$pid"
  done
  return 0
}

# our_netns: the network namespaces the cluster's pods were given, as the
# CNI plugins' result cache for this network records them. containerd mounts
# them under the state directory; they are named here so that they go even
# if that ever changes.
our_netns() {
  local f
  for f in "$CNI_CACHE/$NETWORK"-*; do
    [ -f "$f" ] && jq -r '.. | objects | .sandbox? // empty' "$f" 2>/dev/null
  done
  return 0
}

# our_sandboxes: the IDs of the pod sandboxes containerd made, from its state
# directory and from the CNI result cache (containerd also caches a result for
# each sandbox's loopback network, under its own network name).
our_sandboxes() {
  local d f
  for d in "$STATE/containerd/state/io.containerd.grpc.v1.cri/sandboxes"/*; do
    [ -d "$d" ] && basename "$d"
  done
  for f in "$CNI_CACHE/$NETWORK"-*; do
    [ -f "$f" ] && jq -r '.containerId // empty' "$f" 2>/dev/null
  done
  return 0
}

# mounts_under DIR: mount points under DIR, deepest first.
mounts_under() {
  awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -ru
}

down() {
  [ -d "$STATE" ] || { log "nothing to bring down: no $STATE"; return 0; }
  [ -f "$STATE/.strictgrade-cluster" ] || die "$STATE was not made by this script"
  local netns sandboxes id
  netns=$(our_netns | sort -u)
  sandboxes=$(our_sandboxes | sort -u)

  stop kubelet
  stop scheduler
  stop controller-manager

  # Let containerd end its containers and shims, so that the shims remove
  # their sockets; whatever remains is then killed through runc's own state.
  if [ -n "$(pid_of containerd)" ]; then
    for id in $("$CTR" -a "$SOCK" -n k8s.io tasks list -q 2>/dev/null); do
      timeout 20 "$CTR" -a "$SOCK" -n k8s.io tasks delete --force "$id" >/dev/null 2>&1 || true
    done
    for id in $("$CTR" -a "$SOCK" -n k8s.io containers list -q 2>/dev/null); do
      timeout 20 "$CTR" -a "$SOCK" -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  local runc_root=$STATE/runc/k8s.io pid
  if [ -d "$runc_root" ]; then
    for id in $(runc --root "$runc_root" list -q 2>/dev/null); do
      runc --root "$runc_root" delete --force "$id" >/dev/null 2>&1 || log "runc could not delete container $id"
    done
  fi
  local runsc_root=$STATE/runsc/k8s.io
  if [ -d "$runsc_root" ]; then
    for id in $("$GDIR/runsc" --root "$runsc_root" list -quiet 2>/dev/null); do
      "$GDIR/runsc" --root "$runsc_root" delete -force "$id" >/dev/null 2>&1 || log "runsc could not delete container $id"
    done
  fi
  for pid in $(shims); do
    kill -KILL "$pid" 2>/dev/null && log "killed leftover shim $pid"
  done

  stop apiserver
  stop etcd

  local ns
  for ns in $netns; do
    umount "$ns" 2>/dev/null || true
    rm -f "$ns" 2>/dev/null && log "removed network namespace $ns"
  done
  rm -f "$CNI_CACHE/$NETWORK"-*
  for id in $sandboxes; do rm -f "$CNI_CACHE"/*-"$id"-*; done
  local m
  for m in $(mounts_under "$STATE"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link delete "$BRIDGE" && log "removed bridge $BRIDGE"
  fi
  if ip link show "$NODE_LINK" >/dev/null 2>&1; then
    ip link delete "$NODE_LINK" && log "removed link $NODE_LINK"
  fi
  local l
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] || continue
    case "$(readlink "$l")" in "$STATE"/*) rm -f "$l" ;; esac
  done
  for m in $(cgroup_mounts); do
    [ -d "$m/$CGROUP_PARENT" ] || continue
    find "$m/$CGROUP_PARENT" -depth -type d -exec rmdir {} + 2>/dev/null ||
      log "could not remove every cgroup under $m/$CGROUP_PARENT"
  done
  local left=
  left=$(mounts_under "$STATE")
  [ -z "$left" ] || die "still mounted under $STATE: $left"
  left=$(shims)
  [ -z "$left" ] || die "shims still running: $left"
  log "down; logs kept in $STATE/logs"
}

# ---------------------------------------------------------------- env, status

env_cmd() {
  [ -f "$STATE/kubeconfig" ] || die "no cluster under $STATE (run '$0 up')"
  printf 'export KUBECONFIG=%q\n' "$STATE/kubeconfig"
  printf 'export STRICTGRADE_CLUSTER_DIR=%q\n' "$STATE"
  printf 'export STRICTGRADE_CLUSTER_NAMESPACE=%q\n' "$NAMESPACE"
  printf 'export STRICTGRADE_CLUSTER_NAMESPACE2=%q\n' "$NAMESPACE2"
  printf 'export STRICTGRADE_CLUSTER_NAMESPACE3=%q\n' "$NAMESPACE3"
  printf 'export STRICTGRADE_CLUSTER_NAMESPACE4=%q\n' "$NAMESPACE4"
  printf 'export CONTAINERD_ADDRESS=%q\n' "$SOCK"
  printf 'export CONTAINERD_NAMESPACE=k8s.io\n'
  printf 'export STRICTGRADE_CLUSTER_GVISOR=%q\n' "$GVISOR_CLASS"
}

status() {
  local c pid running=0 total=0
  for c in $COMPONENTS; do
    total=$((total + 1))
    pid=$(pid_of "$c")
    if [ -n "$pid" ]; then
      running=$((running + 1))
      printf '%-20s running (pid %s)\n' "$c" "$pid"
    else
      printf '%-20s stopped\n' "$c"
    fi
  done
  if [ -f "$PKI/admin.crt" ] && apiserver_ready; then
    printf '%-20s ready\n' "apiserver /readyz"
    if node_ready 2>/dev/null; then printf '%-20s Ready\n' "node $NODE"; else printf '%-20s not Ready\n' "node $NODE"; fi
  fi
  printf '%-20s %s\n' shims "$(shims | wc -l)"
  printf '%-20s %s\n' "mounts" "$( [ -d "$STATE" ] && mounts_under "$STATE" | wc -l || echo 0)"
  [ "$running" = "$total" ]
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  env) env_cmd ;;
  status) status ;;
  node-stop) node_stop ;;
  node-start) node_start ;;
  *) usage ;;
esac
