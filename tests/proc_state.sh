# proc_state.sh: sourced by the test-component scripts (test_hosts.sh, netns_hosts.sh, slurm_cluster.sh), which
# stop what they started by pid file and must tell a live process from a gone or zombie one.

running() {  # pid -> 0 when it exists and is not a zombie
  local st
  st=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
