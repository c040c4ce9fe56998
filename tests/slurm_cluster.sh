#!/bin/bash
# slurm_cluster.sh: a one-machine Slurm cluster for tests — a private munged, slurmctld and slurmd
# (Debian's munge and slurm-wlm 22.05) with every key, socket, state, spool, pid and log file
# under DIR.
#
#   tests/slurm_cluster.sh start DIR   start munged, slurmctld, slurmd; wait until the node is idle;
#                                      print the environment a client needs (SLURM_CONF=...,
#                                      BARESGD_MUNGE_SOCKET=...), also written to DIR/env
#   tests/slurm_cluster.sh stop DIR    stop them (through their pid files only)
#   tests/slurm_cluster.sh status DIR  exit 0 when sinfo shows the node up
#
# The cluster: one node "localhost" (NodeAddr 127.0.0.1) with CPUs=4 whatever the machine has
# (SlurmdParameters=config_overrides), partition "debug" with OverSubscribe=FORCE:4, proctrack/
# linuxproc and task/none (no cgroups needed), auth/munge through DIR/munge/munge.socket.2
# (AuthInfo=socket=...), no accounting. TEST_SLURM_NODE=NAME and TEST_SLURM_NODE_ADDR=127.0.0.x name
# the node otherwise: a NodeName that does not resolve (no DNS, no /etc/hosts) reached only at its
# NodeAddr, as on clusters whose node names are Slurm's own. Daemons run as the caller (root in CI). The ports are the
# first two free ones from $TEST_SLURM_PORT (default 16817) upward, recorded in DIR/port.
# Clients need SLURM_CONF=DIR/slurm.conf (the munge socket comes from AuthInfo in it). Stop cancels
# every job, waits for each step's slurmstepd to exit (stopping any that stays through the pid that
# holds its socket under DIR/spool), then kills only the pids in DIR/*.pid, each checked to be the
# daemon it names; start on a running cluster re-checks it and returns 0. A daemon that fails to
# start is named with the last lines of its own log.
set -euo pipefail

die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }
usage() { echo "usage: tests/slurm_cluster.sh start|stop|status DIR" >&2; exit 2; }

[ $# -eq 2 ] || usage
CMD=$1
DIR=$2
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
DAEMONS=(slurmd slurmctld munged)  # stop order
START_TIMEOUT=${TEST_SLURM_TIMEOUT:-30}
NODE=${TEST_SLURM_NODE:-localhost}
NODE_ADDR=${TEST_SLURM_NODE_ADDR:-127.0.0.1}

# shellcheck source=tests/proc_state.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc_state.sh"

daemon_pid() {  # name -> prints the pid of DIR/name.pid when that process is this daemon
  local f="$DIR/$1.pid" pid
  [ -s "$f" ] || return 1
  pid=$(tr -dc 0-9 < "$f")
  [ -n "$pid" ] && running "$pid" && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "$1" || return 1
  echo "$pid"
}

# Cancels every job first and waits (10 s at most) until slurmctld lists none, so that each
# job's slurmstepd ends while slurmd still runs; then the daemons, by pid file.
cancel_jobs() {
  local i
  daemon_pid slurmctld >/dev/null || return 0
  export SLURM_CONF="$DIR/slurm.conf"
  timeout 5 scancel --user="$(id -un)" 2>/dev/null || true
  for i in $(seq 100); do
    [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null | grep -v '^$' || true)" ] && return 0
    sleep 0.1
  done
  echo "slurm_cluster.sh: jobs still listed after scancel: $(timeout 5 squeue -h -o "%i %T" | tr '\n' ' ')" >&2
}

# The pids of the slurmstepds still serving a step: each listens on SlurmdSpoolDir/NODE_JOB.STEP,
# so the pids are those holding the socket bound to such a path (found through /proc/net/unix's
# inode and the processes' fd links), never a process name.
stepd_pids() {
  local sock inode
  for sock in "$DIR"/spool/*_*.*; do
    [ -S "$sock" ] || continue
    for inode in $(awk -v path="$sock" '$8 == path { print $7 }' /proc/net/unix); do
      find /proc/[0-9]*/fd -lname "socket:\[$inode\]" 2>/dev/null | cut -d/ -f3
    done
  done | sort -u
}

# Waits (10 s at most) for every step's slurmstepd to exit, then stops any that remains by its
# socket's pid: a slurmstepd left running after slurmd stops would outlive the cluster.
stop_stepds() {
  local i pid left
  for i in $(seq 100); do
    left=$(stepd_pids)
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "slurm_cluster.sh: stopping slurmstepd pids still serving a step: $(echo $left)" >&2
  for pid in $left; do kill -TERM "$pid" 2>/dev/null || true; done
  for i in $(seq 50); do
    left=$(for pid in $left; do running "$pid" && echo "$pid"; done)
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
}

# The last lines of a daemon's log, on one line: the component's own words for why it failed.
log_tail() { [ -s "$1" ] && tail -n 5 "$1" | tr '\n' ' ' || echo "(no log at $1)"; }

stop_cluster() {
  local name pid i
  cancel_jobs
  stop_stepds
  for name in "${DAEMONS[@]}"; do
    if pid=$(daemon_pid "$name"); then
      kill -TERM "$pid" 2>/dev/null || true
      for i in $(seq 100); do running "$pid" || break; sleep 0.1; done
      if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$DIR/$name.pid"
  done
}

port_free() { ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

pick_ports() {
  local p=${TEST_SLURM_PORT:-16817}
  while [ "$p" -lt 65000 ]; do
    if port_free "$p" && port_free $((p + 1)); then echo "$p"; return 0; fi
    p=$((p + 2))
  done
  die "no two free ports from ${TEST_SLURM_PORT:-16817} upward"
}

write_conf() {
  local port=$1 user
  user=$(id -un)
  cat > "$DIR/slurm.conf" <<EOF
# written by tests/slurm_cluster.sh: a one-machine test cluster, everything under $DIR
ClusterName=baresgd
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
# PMIx keeps each step's client directory (spmix_appdir_UID_JOB.STEP) under TmpFS: inside DIR, so
# a new cluster, whose job ids start again at 1, never meets an old cluster's leftovers in /tmp.
TmpFS=$DIR/tmp
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=5
InactiveLimit=0
MinJobAge=300
NodeName=$NODE NodeAddr=$NODE_ADDR CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

start_munged() {
  mkdir -p "$DIR/munge"
  chmod 755 "$DIR/munge"  # munged wants the socket reachable by every user
  if [ ! -s "$DIR/munge.key" ]; then
    dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge.key"
  fi
  munged --force --socket="$DIR/munge/munge.socket.2" --pid-file="$DIR/munged.pid" \
    --key-file="$DIR/munge.key" --log-file="$DIR/munged.log" --seed-file="$DIR/munged.seed" ||
    die "munged did not start: $(log_tail "$DIR/munged.log")"
}

node_state() { SLURM_CONF="$DIR/slurm.conf" timeout 5 sinfo -h -N -o '%T' 2>/dev/null | head -1; }

print_env() {
  {
    echo "SLURM_CONF=$DIR/slurm.conf"
    echo "BARESGD_MUNGE_SOCKET=$DIR/munge/munge.socket.2"
  } > "$DIR/env"
  cat "$DIR/env"
}

start_cluster() {
  local port state i
  mkdir -p "$DIR"
  chmod 755 "$DIR"
  if daemon_pid slurmctld >/dev/null && daemon_pid slurmd >/dev/null && daemon_pid munged >/dev/null &&
     [ "$(node_state)" = idle ]; then
    print_env
    return 0
  fi
  stop_cluster
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    die "slurmctld or munged not installed (apt-get install slurm-wlm munge)"
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/tmp"
  port=$(pick_ports)
  echo "$port" > "$DIR/port"
  write_conf "$port"
  start_munged
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -i -f "$SLURM_CONF" || die "slurmctld did not start: $(log_tail "$DIR/slurmctld.log")"
  slurmd -f "$SLURM_CONF" -N "$NODE" || die "slurmd did not start: $(log_tail "$DIR/slurmd.log")"
  for i in $(seq $((START_TIMEOUT * 5))); do
    state=$(node_state)
    case "$state" in idle|mixed|allocated) print_env; return 0 ;; esac
    sleep 0.2
  done
  die "node $NODE not idle within ${START_TIMEOUT}s (sinfo says '${state:-nothing}'; slurmd.log: $(log_tail "$DIR/slurmd.log"))"
}

case "$CMD" in
  start) start_cluster ;;
  stop) stop_cluster ;;
  status) case "$(node_state)" in idle|mixed|allocated) exit 0 ;; *) exit 1 ;; esac ;;
  *) usage ;;
esac
