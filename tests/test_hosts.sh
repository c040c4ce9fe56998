#!/bin/bash
# test_hosts.sh: fake cluster for launcher tests — one sshd per "host" on 127.0.0.x (hpc01, hpc03) and an ssh_config.
#
#   tests/test_hosts.sh start DIR   start hpc01 (127.0.0.11) and hpc03 (127.0.0.13); write DIR/ssh_config
#   tests/test_hosts.sh stop DIR    stop them
#   tests/test_hosts.sh status DIR  exit 0 when both answer over ssh
#
# Everything lives in DIR: throwaway host keys, a client key, authorized_keys (restricted to 127.0.0.0/8),
# sshd configs, pid files, logs, known_hosts (pre-filled, so StrictHostKeyChecking stays on) and ssh_config.
# hpc02 -> 127.0.0.12 is in ssh_config with nothing listening: the unreachable host for tests.
# The port is the first free one from $TEST_HOSTS_PORT (default 2222) upward, the same on both hosts;
# it is recorded in DIR/port. Only loopback addresses are ever used. Idempotent: start on running hosts
# re-checks them and returns 0; stop on stopped hosts returns 0.
set -euo pipefail

SSHD=/usr/sbin/sshd
HOSTS=("hpc01:127.0.0.11" "hpc03:127.0.0.13")
UNREACHABLE="hpc02:127.0.0.12"

die() { echo "test_hosts.sh: $*" >&2; exit 1; }

usage() { echo "usage: tests/test_hosts.sh start|stop|status DIR" >&2; exit 2; }

[ $# -eq 2 ] || usage
CMD=$1
DIR=$2
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac

# shellcheck source=tests/proc_state.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc_state.sh"
# shellcheck source=tests/sshd_host.sh
source "$(dirname "${BASH_SOURCE[0]}")/sshd_host.sh"

pid_alive() {  # pidfile -> 0 when the sshd it names runs
  local f=$1 pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && running "$pid" && grep -q sshd "/proc/$pid/cmdline" 2>/dev/null
}

stop_hosts() {
  local entry name pid i
  for entry in "${HOSTS[@]}"; do
    name=${entry%%:*}
    if pid_alive "$DIR/$name.pid"; then
      pid=$(cat "$DIR/$name.pid")
      kill -TERM "$pid" 2>/dev/null || true
      for i in $(seq 50); do running "$pid" || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/$name.pid"
  done
}

write_ssh_config() {
  local port=$1 entry name addr
  {
    echo "# written by tests/test_hosts.sh: throwaway test hosts on loopback"
    for entry in "${HOSTS[@]}" "$UNREACHABLE"; do
      name=${entry%%:*}; addr=${entry#*:}
      echo "Host $name"
      echo "  HostName $addr"
    done
    echo "Host hpc01 hpc02 hpc03"
    ssh_client_lines "$DIR" "$port"
  } > "$DIR/ssh_config.tmp"
  mv "$DIR/ssh_config.tmp" "$DIR/ssh_config"
  : > "$DIR/known_hosts.tmp"
  for entry in "${HOSTS[@]}"; do
    name=${entry%%:*}; addr=${entry#*:}
    echo "[$name]:$port,[$addr]:$port $(cut -d' ' -f1,2 "$DIR/${name}_host_key.pub")" >> "$DIR/known_hosts.tmp"
  done
  mv "$DIR/known_hosts.tmp" "$DIR/known_hosts"
}

write_sshd_config() {  # name addr port
  local name=$1 addr=$2 port=$3
  {
    echo "# sshd for test host $name (tests/test_hosts.sh)"
    sshd_config_lines "$DIR" "$name" "$port" "$addr" "$DIR/$name.pid"
  } > "$DIR/$name.sshd_config"
}

check_hosts() {  # -> 0 when every host answers
  local entry name
  for entry in "${HOSTS[@]}"; do
    name=${entry%%:*}
    ssh -F "$DIR/ssh_config" -o ConnectTimeout=3 "$name" true </dev/null >/dev/null 2>&1 || return 1
  done
}

start_hosts() {
  mkdir -p "$DIR" /run/sshd
  chmod 700 "$DIR"
  [ -x "$SSHD" ] || die "$SSHD not found (apt-get install openssh-server)"
  local entry name addr
  make_ssh_keys "$DIR" test 127.0.0.0/8 "${HOSTS[@]%%:*}"

  # Already running (idempotent start)?
  local all_up=1
  for entry in "${HOSTS[@]}"; do
    pid_alive "$DIR/${entry%%:*}.pid" || all_up=0
  done
  if [ $all_up = 1 ] && [ -s "$DIR/port" ]; then
    write_ssh_config "$(cat "$DIR/port")"
    if check_hosts; then return 0; fi
  fi
  stop_hosts

  local port=${TEST_HOSTS_PORT:-2222} last=$(( ${TEST_HOSTS_PORT:-2222} + 50 )) ok=0 r
  while [ "$port" -le "$last" ]; do
    ok=1
    for entry in "${HOSTS[@]}"; do
      name=${entry%%:*}; addr=${entry#*:}
      write_sshd_config "$name" "$addr" "$port"
      "$SSHD" -t -f "$DIR/$name.sshd_config" || die "sshd rejects $DIR/$name.sshd_config"
      rm -f "$DIR/$name.log"
      # sshd daemonizes before it binds (exit status 0 either way): wait for its pid file or its error.
      "$SSHD" -f "$DIR/$name.sshd_config" -E "$DIR/$name.log" || die "$SSHD failed: $(cat "$DIR/$name.log" 2>/dev/null)"
      r=wait
      for i in $(seq 100); do
        if pid_alive "$DIR/$name.pid"; then r=up; break; fi
        if [ -s "$DIR/$name.log" ] && grep -q -i "cannot bind\|address already in use" "$DIR/$name.log"; then r=busy; break; fi
        if [ -s "$DIR/$name.log" ] && grep -q -i "fatal\|error" "$DIR/$name.log"; then r=fail; break; fi
        sleep 0.05
      done
      case $r in
        up) ;;
        busy) ok=0; break ;;
        *) cat "$DIR/$name.log" >&2 2>/dev/null || true; stop_hosts
           die "sshd for $name ($addr:$port) did not start (log $DIR/$name.log)" ;;
      esac
    done
    if [ $ok = 1 ]; then break; fi
    stop_hosts
    port=$((port + 1))
  done
  [ $ok = 1 ] || die "no free port in ${TEST_HOSTS_PORT:-2222}..$last on 127.0.0.11/127.0.0.13"
  echo "$port" > "$DIR/port"
  write_ssh_config "$port"

  local i
  for i in $(seq 50); do
    if check_hosts; then
      echo "test_hosts.sh: hpc01=127.0.0.11:$port hpc03=127.0.0.13:$port up; ssh -F $DIR/ssh_config hpc01 ..." >&2
      return 0
    fi
    sleep 0.1
  done
  ssh -F "$DIR/ssh_config" -o ConnectTimeout=3 hpc01 true </dev/null || true
  cat "$DIR"/*.log >&2 2>/dev/null || true
  stop_hosts
  die "sshd started but the hosts do not answer over ssh"
}

case "$CMD" in
  start) start_hosts ;;
  stop) [ -d "$DIR" ] || exit 0; stop_hosts ;;
  status) [ -f "$DIR/ssh_config" ] && check_hosts ;;
  *) usage ;;
esac
