#!/bin/bash
# netns_hosts.sh: two test hosts that are separate machines on a network — one network namespace
# per host (nsA, nsB), each with its own sshd and its own CPU, joined by an emulated link with
# latency and a bandwidth limit (tests/tool_tap_link: a tap in each namespace, frames moved between
# them in user space; this kernel has no netem).
#
#   tests/netns_hosts.sh up DIR [--delay MS] [--bandwidth BYTES_PER_S] [--mtu BYTES]
#   tests/netns_hosts.sh down DIR                 stop everything by its pid file, delete the namespaces
#   tests/netns_hosts.sh status DIR               exit 0 when both hosts answer over ssh
#   tests/netns_hosts.sh exec DIR CMD [ARG...]    run CMD in nsA's network namespace, on nsA's CPU: where
#                                                 ./launch runs
#   tests/netns_hosts.sh exec-b DIR CMD [ARG...]  run CMD in nsB's network namespace, on nsB's CPU (no
#                                                 ssh: a process on host nsB, e.g. the bench's PyTorch rank 1)
#   tests/netns_hosts.sh link DIR HOST up|down    set HOST's tap up or down (down cuts HOST off the link)
#
# Network: nsA is 10.213.0.1/24 and nsB 10.213.0.2/24 on a tap named bsgd0 in each namespace (MTU
# --mtu, 1500 by default). The namespaces hold only lo and that tap, no default route and no veth:
# nothing routes out of them, and the addresses exist only inside them, so parallel runs (different
# DIRs) never collide. The namespace names are bsgd<8 hex digits of DIR's path>-a/-b. The link is
# one process, tool_tap_link (built by make test-build; found in $BARESGD_TOOLS, else build/tests),
# in the root namespace with no network of its own: --delay MS is added each way (the round trip
# grows by 2*MS), --bandwidth BYTES_PER_S (K, M, G = 1e3, 1e6, 1e9) limits each direction, and a
# 4 MiB queue per direction drops what overflows it. The taps offload checksums and TCP
# segmentation as a virtual machine's NIC does, so the link moves up to 64 KB per frame.
#
# CPUs: a machine's ranks do not share its cores with another machine's. With two or more CPUs
# allowed, nsA's processes (its sshd and all it starts, and `exec`) run on the first and nsB's on the
# second (taskset), so each host's ranks see one CPU; the link process runs on any. DIR/cpus says
# which. With one CPU the hosts share it.
#
# Hosts: each sshd runs inside its namespace (and its own UTS namespace, hostname nsA or nsB) on
# port 22 of its tap address. DIR/ssh_config maps nsA/nsB to those addresses with throwaway keys.
# The launcher runs in nsA's network namespace (`exec`) with the machine's hostname, so both nsA and
# nsB are ssh hosts to it: `netns_hosts.sh exec DIR env $(cat DIR/env) ./launch -H nsA:2,nsB:2 ...`.
# Its store binds nsA's address; ranks on nsB reach it, and each other, over the link only.
# DIR/env holds BARESGD_SSH_CONFIG and the Open MPI settings that pin mpirun, orted and the ranks
# to bsgd0. Every pid is recorded in DIR/*.pid; down signals a pid only while /proc shows it running
# its program with DIR in its arguments, then stops what is still inside the two namespaces (what
# their sshds started), then deletes them. down is idempotent; up on a DIR that is up starts afresh,
# and a failed up undoes itself. Every error is one line and exit 1 (2 for a bad command line).
set -euo pipefail

SSHD=/usr/sbin/sshd
TAP=bsgd0
NET=10.213.0
HOSTS=(nsA nsB)

die() { echo "netns_hosts.sh: $*" >&2; exit 1; }
usage() {
  echo "usage: tests/netns_hosts.sh up DIR [--delay MS] [--bandwidth BYTES_PER_S] [--mtu BYTES] | down DIR | status DIR | exec DIR CMD... | exec-b DIR CMD... | link DIR HOST up|down" >&2
  exit 2
}

[ $# -ge 2 ] || usage
CMD=$1
DIR=$2
shift 2
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
DIR=${DIR%/}

# shellcheck source=tests/proc_state.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc_state.sh"
# shellcheck source=tests/sshd_host.sh
source "$(dirname "${BASH_SOURCE[0]}")/sshd_host.sh"

TAP_LINK=${BARESGD_TOOLS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/tests}/tool_tap_link
PREFIX="bsgd$(printf '%s' "$DIR" | sha256sum | cut -c1-8)"
netns_of() { case $1 in nsA) echo "$PREFIX-a" ;; nsB) echo "$PREFIX-b" ;; *) return 1 ;; esac; }
addr_of() { case $1 in nsA) echo "$NET.1" ;; nsB) echo "$NET.2" ;; *) return 1 ;; esac; }

# ---- processes we started: pid files, checked against the program and DIR before any signal ----

ours() {  # pidfile program -> 0 when the pid it names runs program with DIR in its arguments
  local f=$1 prog=$2 pid cmdline
  [ -s "$f" ] || return 1
  pid=$(tr -cd 0-9 < "$f")
  [ -n "$pid" ] && running "$pid" || return 1
  cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  case "$cmdline" in *"$prog"*"$DIR"*) return 0 ;; *) return 1 ;; esac
}

stop_pidfile() {  # pidfile program: TERM, wait up to 5 s, KILL; remove the pid file
  local f=$1 prog=$2 pid
  if ours "$f" "$prog"; then
    pid=$(tr -cd 0-9 < "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$f"
}

wait_pidfile() {  # pidfile program what -> waits up to 5 s for the daemon's pid file
  local _
  for _ in $(seq 100); do
    ours "$1" "$2" && return 0
    sleep 0.05
  done
  die "$3 did not start (no live pid in $1${4:+; log $4})"
}

# ---- down ----

stop_leftovers() {  # host: processes still in the host's namespace (started there through its sshd)
  local ns pids p
  ns=$(netns_of "$1")
  [ -e "/run/netns/$ns" ] || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || return 0
  [ -n "${pids// /}" ] || return 0
  echo "netns_hosts.sh: stopping what is left in $1 ($ns): $(for p in $pids; do printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)" >&2
  # shellcheck disable=SC2086  # one argument per pid
  kill -KILL $pids 2>/dev/null || true
}

down() {
  [ -d "$DIR" ] || return 0
  local h ns
  for h in "${HOSTS[@]}"; do stop_pidfile "$DIR/sshd-$h.pid" sshd; done
  stop_pidfile "$DIR/link.pid" tool_tap_link
  for h in "${HOSTS[@]}"; do stop_leftovers "$h"; done
  for h in "${HOSTS[@]}"; do
    ns=$(netns_of "$h")
    if [ -e "/run/netns/$ns" ]; then
      ip netns del "$ns" 2>/dev/null || die "cannot delete network namespace $ns"
    fi
  done
  rm -f "$DIR/env" "$DIR/ssh_config" "$DIR/cpus"
}

# ---- up ----

need() {  # program package
  command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt-get install $2; .ci/install-deps installs it)"
}

check_prerequisites() {
  [ "$(id -u)" -eq 0 ] || die "network namespaces need root (running as $(id -un))"
  need ip iproute2; need ssh openssh-client; need ssh-keygen openssh-client; need unshare util-linux
  need taskset util-linux; need ping iputils-ping
  [ -x "$TAP_LINK" ] || die "$TAP_LINK not found (run: make test-build)"
  [ -x "$SSHD" ] || die "$SSHD not found (apt-get install openssh-server)"
  [ -c /dev/net/tun ] || die "/dev/net/tun is missing: no tap devices on this machine"
}

make_keys() { make_ssh_keys "$DIR" netns "$NET.0/24" "${HOSTS[@]}"; }

make_namespace() {  # host: namespace with lo up, nothing else yet
  local ns
  ns=$(netns_of "$1")
  [ -e "/run/netns/$ns" ] && die "network namespace $ns already exists (run: tests/netns_hosts.sh down $DIR)"
  ip netns add "$ns" 2>"$DIR/ip.err" || die "cannot create network namespace $ns: $(head -1 "$DIR/ip.err")"
  ip -n "$ns" link set lo up
}

# ---- CPUs: one per host when there are two ----

allowed_cpus() {  # the CPUs this script may run on, one per line
  local list part
  list=$(taskset -cp $$ | sed 's/.*: *//')
  for part in ${list//,/ }; do
    case $part in *-*) seq "${part%-*}" "${part#*-}" ;; *) echo "$part" ;; esac
  done
}

write_cpus() {  # DIR/cpus: "nsA CPU" and "nsB CPU" lines; the same CPU twice when there is one
  local cpus
  mapfile -t cpus < <(allowed_cpus)
  [ ${#cpus[@]} -ge 1 ] || die "cannot read this process's CPU affinity (taskset -cp $$)"
  printf 'nsA %s\nnsB %s\n' "${cpus[0]}" "${cpus[$((${#cpus[@]} > 1 ? 1 : 0))]}" > "$DIR/cpus"
}

cpu_of() { sed -n "s/^$1 //p" "$DIR/cpus"; }

# ---- the link ----

start_link() {  # delay bandwidth: tool_tap_link makes the taps; then each is addressed and set up
  local args=(--netns-a "/run/netns/$(netns_of nsA)" --netns-b "/run/netns/$(netns_of nsB)" --tap "$TAP"
              --pidfile "$DIR/link.pid")
  [ -n "$1" ] && args+=(--delay-ms "$1")
  [ -n "$2" ] && args+=(--bandwidth "$2")
  setsid "$TAP_LINK" "${args[@]}" </dev/null >"$DIR/link.log" 2>&1 &
  wait_pidfile "$DIR/link.pid" tool_tap_link "the link (tool_tap_link)" "$DIR/link.log"
}

address_tap() {  # host mtu
  local h=$1 ns
  ns=$(netns_of "$h")
  ip -n "$ns" addr add "$(addr_of "$h")/24" dev "$TAP" 2>"$DIR/ip.err" \
    || die "cannot give $TAP in $ns the address $(addr_of "$h"): $(head -1 "$DIR/ip.err")"
  ip -n "$ns" link set "$TAP" mtu "$2" up 2>"$DIR/ip.err" \
    || die "cannot set $TAP up with MTU $2 in $ns: $(head -1 "$DIR/ip.err")"
}

write_sshd_config() {  # host
  local h=$1
  {
    echo "# sshd for test host $h inside network namespace $(netns_of "$h") (tests/netns_hosts.sh)"
    sshd_config_lines "$DIR" "$h" 22 "$(addr_of "$h")" "$DIR/sshd-$h.pid"
    echo "# A session whose client went silent (its link cut) ends within 6 s instead of TCP's 15 minutes."
    echo "ClientAliveInterval 2"
    echo "ClientAliveCountMax 3"
  } > "$DIR/sshd-$h.config"
}

start_sshd() {  # host: sshd in the host's namespace and its own UTS namespace (hostname = host)
  local h=$1 ns
  ns=$(netns_of "$h")
  mkdir -p /run/sshd
  write_sshd_config "$h"
  "$SSHD" -t -f "$DIR/sshd-$h.config" 2>"$DIR/sshd-$h.log" || die "sshd rejects $DIR/sshd-$h.config: $(head -1 "$DIR/sshd-$h.log")"
  # shellcheck disable=SC2016  # $1..$4 are the inner shell's
  taskset -c "$(cpu_of "$h")" ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && exec "$2" -f "$3" -E "$4"' sh "$h" "$SSHD" \
    "$DIR/sshd-$h.config" "$DIR/sshd-$h.log" </dev/null || die "sshd for $h failed: $(head -1 "$DIR/sshd-$h.log")"
  wait_pidfile "$DIR/sshd-$h.pid" sshd "sshd for $h" "$DIR/sshd-$h.log"
}

write_client_files() {
  local h
  {
    echo "# written by tests/netns_hosts.sh: throwaway test hosts in network namespaces"
    for h in "${HOSTS[@]}"; do
      echo "Host $h ${h,,}"
      echo "  HostName $(addr_of "$h")"
    done
    echo "Host nsA nsB nsa nsb"
    ssh_client_lines "$DIR" 22
  } > "$DIR/ssh_config"
  : > "$DIR/known_hosts"
  for h in "${HOSTS[@]}"; do
    echo "$h,${h,,},$(addr_of "$h") $(cut -d' ' -f1,2 "$DIR/${h}_host_key.pub")" >> "$DIR/known_hosts"
  done
  {
    echo "BARESGD_SSH_CONFIG=$DIR/ssh_config"
    echo "OMPI_MCA_btl=self,tcp"
    echo "OMPI_MCA_btl_tcp_if_include=$TAP"
    echo "OMPI_MCA_oob_tcp_if_include=$TAP"
    echo "OMPI_MCA_if_base_do_not_resolve=1"
    echo "OMPI_MCA_pml=ob1"
  } > "$DIR/env"
}

check_hosts() {  # -> 0 when both hosts answer over ssh from nsA's namespace
  local h
  for h in "${HOSTS[@]}"; do
    ip netns exec "$(netns_of nsA)" ssh -F "$DIR/ssh_config" -o ConnectTimeout=3 "$h" true \
      </dev/null >/dev/null 2>&1 || return 1
  done
}

check_isolated() {  # no namespace routes anywhere but its /24
  local h ns
  for h in "${HOSTS[@]}"; do
    ns=$(netns_of "$h")
    if ip -n "$ns" route show default | grep -q .; then die "namespace $ns has a default route"; fi
    if ip -n "$ns" route get 1.1.1.1 >/dev/null 2>&1; then die "namespace $ns routes outside $NET.0/24"; fi
  done
}

up() {
  local delay="" band="" mtu=1500
  while [ $# -gt 0 ]; do
    case $1 in
      --delay) [ $# -ge 2 ] || die "--delay needs MS"; delay=$2; shift 2
        [[ $delay =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--delay '$delay' is not a number of milliseconds" ;;
      --bandwidth) [ $# -ge 2 ] || die "--bandwidth needs BYTES_PER_S"; band=$2; shift 2
        [[ $band =~ ^[1-9][0-9]{0,12}[KMG]?$ ]] || die "--bandwidth '$band' is not bytes per second (e.g. 12500000 or 100M)" ;;
      --mtu) [ $# -ge 2 ] || die "--mtu needs BYTES"; mtu=$2; shift 2
        [[ $mtu =~ ^[1-9][0-9]{2,4}$ ]] && [ "$mtu" -ge 576 ] && [ "$mtu" -le 65521 ] \
          || die "--mtu '$mtu' is not 576 to 65521 bytes" ;;
      *) die "unknown option '$1' (up takes --delay MS, --bandwidth BYTES_PER_S and --mtu BYTES)" ;;
    esac
  done
  check_prerequisites
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  down
  make_keys
  local h
  # shellcheck disable=SC2154  # rc is the trap's own
  trap 'rc=$?; trap - EXIT; [ $rc -eq 0 ] || down || true; exit $rc' EXIT  # a failed up leaves nothing
  for h in "${HOSTS[@]}"; do make_namespace "$h"; done
  write_cpus
  start_link "$delay" "$band"
  for h in "${HOSTS[@]}"; do address_tap "$h" "$mtu"; done
  for h in "${HOSTS[@]}"; do start_sshd "$h"; done
  write_client_files
  check_isolated
  local _
  for _ in $(seq 50); do
    if check_hosts; then
      echo "netns_hosts.sh: nsA=$(addr_of nsA) ($(netns_of nsA)) nsB=$(addr_of nsB) ($(netns_of nsB)) up;" \
        "link delay ${delay:-0} ms, bandwidth ${band:-unlimited}, MTU $mtu; CPUs nsA $(cpu_of nsA), nsB $(cpu_of nsB); launcher: tests/netns_hosts.sh exec $DIR ..." >&2
      return 0
    fi
    sleep 0.1
  done
  ip netns exec "$(netns_of nsA)" ssh -F "$DIR/ssh_config" -o ConnectTimeout=3 nsB true </dev/null || true
  die "the sshds started but nsA and nsB do not answer over ssh (logs $DIR/sshd-*.log)"
}

case "$CMD" in
  up) up "$@" ;;
  down) [ $# -eq 0 ] || usage; down ;;
  status) [ $# -eq 0 ] || usage; [ -f "$DIR/ssh_config" ] && check_hosts ;;
  exec|exec-b) [ $# -ge 1 ] || usage
    h=$([ "$CMD" = exec ] && echo nsA || echo nsB)
    ns=$(netns_of "$h")
    [ -e "/run/netns/$ns" ] && [ -s "$DIR/cpus" ] || die "no hosts in $DIR (run: tests/netns_hosts.sh up $DIR)"
    exec taskset -c "$(cpu_of "$h")" ip netns exec "$ns" "$@" ;;
  link) [ $# -eq 2 ] || usage
    ns=$(netns_of "$1") || die "unknown host '$1' (nsA or nsB)"
    case $2 in up|down) ;; *) usage ;; esac
    [ -e "/run/netns/$ns" ] || die "no host $1 in $DIR (run: tests/netns_hosts.sh up $DIR)"
    ip -n "$ns" link set "$TAP" "$2" 2>"$DIR/ip.err" || die "cannot set $1's $TAP $2: $(head -1 "$DIR/ip.err")" ;;
  *) usage ;;
esac
