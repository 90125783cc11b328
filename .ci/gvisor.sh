#!/usr/bin/env bash
# A second Docker daemon whose containers can run under gVisor, for tests.
#
#   .ci/gvisor.sh build   build runsc and gVisor's containerd shim
#                         (containerd-shim-runsc-v1, for the test cluster's
#                         gvisor RuntimeClass) from the Go module proxy into
#                         the cache
#   .ci/gvisor.sh path    print the directory that holds both binaries
#   .ci/gvisor.sh up      start dockerd (runtimes runc and runsc) with its own
#                         socket, data root and containerd, and load the
#                         project's images into it from the main daemon
#   .ci/gvisor.sh env     print the environment that points the CLI and the
#                         tests at it (DOCKER_HOST, STRICTGRADE_RUNTIME)
#   .ci/gvisor.sh status  say whether it runs
#   .ci/gvisor.sh down    stop what `up` started, by PID, and unmount its dirs
#
# The machine's own Docker daemon is never restarted or reconfigured: this
# daemon has its own socket, exec root, data root, containerd, cgroup parent
# and a bridge of its own (BRIDGE, made by `up`, deleted by `down`), never
# "none": a dockerd started with no bridge deletes the interface docker0 it
# finds, which leaves the machine's daemon unable to give a build step a
# network. Runs as root.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"

# gvisor.dev/gvisor's "go" branch, pinned (it has no tagged releases there).
GVISOR_VERSION=${GVISOR_VERSION:-v0.0.0-20260905035102-160fafc42237}
CACHE=${STRICTGRADE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strictgrade}
BIN=$CACHE/gvisor-$GVISOR_VERSION/runsc
DIR=${STRICTGRADE_GVISOR_DIR:-/tmp/strictgrade-gvisor}
SOCK=$DIR/docker.sock
# The second daemon's own bridge: its containers never use it (every
# sandbox runs with network none), but a daemon needs one (see above).
BRIDGE=${STRICTGRADE_GVISOR_BRIDGE:-sggvisor0}
BRIDGE_ADDR=${STRICTGRADE_GVISOR_BRIDGE_ADDR:-10.213.113.1/24}
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf '== gvisor: %s\n' "$*" >&2; }

GDIR=$CACHE/gvisor-$GVISOR_VERSION
SHIM=$GDIR/containerd-shim-runsc-v1

# static BINARY: whether BINARY runs and needs no dynamic loader (runsc
# re-executes itself inside a root that has none).
static() { [ -x "$1" ] && ! readelf -l "$1" | grep -q 'program interpreter'; }

build() {
  mkdir -p "$GDIR"
  # As the test cluster's build does (.ci/cluster.sh): a compiler that
  # collects its garbage less often, for the build alone (local: `up` may
  # call build, and the daemon it starts keeps Go's default).
  local -x GOGC=${STRICTGRADE_BUILD_GOGC:-400}
  # .ci/run builds for the Docker daemon and for the test cluster at once.
  exec 8>"$GDIR/.lock"
  flock 8
  local mod=$GDIR/module start=$SECONDS
  if static "$BIN" && "$BIN" --version >/dev/null 2>&1; then
    say "runsc $GVISOR_VERSION is cached at $BIN"
  else
    mkdir -p "$mod"
    printf 'module strictgrade.local/runsc\n\ngo 1.26\n' >"$mod/go.mod"
    say "fetching gvisor.dev/gvisor@$GVISOR_VERSION"
    (cd "$mod" && go get "gvisor.dev/gvisor/runsc@$GVISOR_VERSION")
    say "building runsc (a few minutes from a cold cache)"
    (cd "$mod" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags='-s -w' -o "$BIN.tmp" gvisor.dev/gvisor/runsc)
    mv "$BIN.tmp" "$BIN"
    say "built runsc in $((SECONDS - start)) s"
  fi
  if static "$SHIM"; then
    say "containerd-shim-runsc-v1 is cached at $SHIM"
    return
  fi
  start=$SECONDS
  # A module of its own, vendored: the shim's main package is gVisor's own
  # three lines, and the vendored copy of one file is patched below.
  local shimmod=$GDIR/shim-module
  rm -rf "$shimmod" && mkdir -p "$shimmod"
  printf 'module strictgrade.local/runscshim\n\ngo 1.26\n' >"$shimmod/go.mod"
  printf 'package main\n\nimport "gvisor.dev/gvisor/shim/v1/cli"\n\nfunc main() { cli.Main() }\n' >"$shimmod/main.go"
  (cd "$shimmod" && go get "gvisor.dev/gvisor/shim/v1/cli@$GVISOR_VERSION" && go mod vendor)
  # The shim lowers its own OOM score to -999 and gives up when it cannot;
  # root on these machines lacks CAP_SYS_RESOURCE, so it never can: the
  # failure is ignored. Nothing may be printed there instead: the shim's
  # standard output is containerd's bootstrap channel.
  local src=$shimmod/vendor/gvisor.dev/gvisor/pkg/shim/v1/manager.go
  local want='return shim.BootstrapParams{}, fmt.Errorf("failed to set OOM Score on shim: %w", err)'
  [ "$(grep -cF "$want" "$src" 2>/dev/null)" = 1 ] || { say "$src changed: look again at the OOM score patch"; exit 1; }
  awk -v want="$want" '{ i = index($0, want); if (i) { $0 = substr($0, 1, i - 1) "_ = err // root here may not lower a score" } print }' \
    "$src" >"$src.new"
  mv "$src.new" "$src"
  say "building containerd-shim-runsc-v1"
  (cd "$shimmod" && CGO_ENABLED=0 nice -n 10 go build -mod=vendor -trimpath -ldflags='-s -w' -o "$SHIM.tmp" .)
  mv "$SHIM.tmp" "$SHIM"
  say "built containerd-shim-runsc-v1 in $((SECONDS - start)) s"
}

running() { [ -f "$DIR/dockerd.pid" ] && kill -0 "$(cat "$DIR/dockerd.pid")" 2>/dev/null; }

up() {
  [ -x "$BIN" ] || build
  if running && docker -H "unix://$SOCK" info >/dev/null 2>&1; then
    say "already up at unix://$SOCK"
  else
    mkdir -p "$DIR/data" "$DIR/exec"
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
      ip link add "$BRIDGE" type bridge
      ip addr add "$BRIDGE_ADDR" dev "$BRIDGE"
      ip link set "$BRIDGE" up
    fi
    # systrap needs no hardware virtualisation; the sandboxes have no
    # network, as every strictgrade sandbox.
    cat >"$DIR/daemon.json" <<EOF
{
  "hosts": ["unix://$SOCK"],
  "data-root": "$DIR/data",
  "exec-root": "$DIR/exec",
  "pidfile": "$DIR/dockerd.pid",
  "bridge": "$BRIDGE",
  "ip-forward": false,
  "iptables": false,
  "ip6tables": false,
  "ip-masq": false,
  "storage-driver": "overlay2",
  "cgroup-parent": "/strictgrade-gvisor",
  "runtimes": {
    "runsc": {"path": "$BIN", "runtimeArgs": ["--platform=systrap", "--network=none", "--root=$DIR/runsc"]}
  }
}
EOF
    say "starting dockerd on unix://$SOCK"
    nohup dockerd --config-file "$DIR/daemon.json" >"$DIR/dockerd.log" 2>&1 &
    local ok=0
    for _ in $(seq 1 60); do
      if docker -H "unix://$SOCK" info >/dev/null 2>&1; then ok=1; break; fi
      sleep 0.5
    done
    if [ "$ok" != 1 ]; then
      say "dockerd did not come up; its log:"
      tail -n 30 "$DIR/dockerd.log" >&2 || true
      exit 1
    fi
  fi
  docker -H "unix://$SOCK" info --format '{{json .Runtimes}}' | grep -q '"runsc"' || { say "runsc is not among the daemon's runtimes"; exit 1; }
  # The project's images, by ID, from the main daemon (no registry here).
  local img id
  for img in $(docker images --filter label=dev.strictgrade.image --format '{{.Repository}}:{{.Tag}}' | grep -v '<none>'); do
    id=$(docker image inspect --format '{{.Id}}' "$img")
    if [ "$(docker -H "unix://$SOCK" image inspect --format '{{.Id}}' "$img" 2>/dev/null)" != "$id" ]; then
      say "loading $img"
      docker save "$img" | docker -H "unix://$SOCK" load -q >/dev/null
    fi
  done
  say "up: $(env_lines | tr '\n' ' ')"
}

env_lines() {
  printf 'export DOCKER_HOST=unix://%s\n' "$SOCK"
  printf 'export STRICTGRADE_RUNTIME=runsc\n'
}

down() {
  if [ -f "$DIR/dockerd.pid" ]; then
    local p
    p=$(cat "$DIR/dockerd.pid")
    if kill "$p" 2>/dev/null; then
      for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$p" 2>/dev/null || true
    fi
    rm -f "$DIR/dockerd.pid"
  fi
  # What that daemon left: its containerd, shims and sandboxes name our dirs.
  local p
  for p in $(pgrep -f -- "$DIR/" || true); do kill -9 "$p" 2>/dev/null || true; done
  sleep 0.5
  grep -oE " $DIR/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for d in /sys/fs/cgroup/*/strictgrade-gvisor; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" 2>/dev/null || true
  say "down"
}

case "${1:-}" in
  build) build ;;
  path) printf '%s\n' "$GDIR" ;;
  up) up ;;
  env) env_lines ;;
  status) if running; then say "up at unix://$SOCK (pid $(cat "$DIR/dockerd.pid"))"; else say "not running"; exit 1; fi ;;
  down) down ;;
  *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
