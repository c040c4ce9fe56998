# shellcheck shell=bash
# sshd_host.sh: sourced by the test-host scripts (test_hosts.sh, netns_hosts.sh): the throwaway ssh
# keys, the sshd configuration of their test "hosts" and the client settings of their ssh_config,
# every file under the script's DIR. Each sshd writes its pid file where its config says; the
# scripts stop it through that file.

make_ssh_keys() {  # dir tag from host...: client key dir/id_ed25519, one host key per host (kept when
  # there), and dir/authorized_keys admitting only the client key, only from the address pattern `from`
  local dir=$1 tag=$2 from=$3 h
  shift 3
  [ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "baresgd-$tag-client" -f "$dir/id_ed25519"
  for h in "$@"; do
    [ -f "$dir/${h}_host_key" ] || ssh-keygen -q -t ed25519 -N '' -C "baresgd-$tag-$h" -f "$dir/${h}_host_key"
  done
  echo "from=\"$from\" $(cat "$dir/id_ed25519.pub")" > "$dir/authorized_keys"
}

sshd_config_lines() {  # dir host port addr pidfile: the sshd_config of one test host, on stdout
  local dir=$1 host=$2 port=$3 addr=$4 pidfile=$5
  cat <<EOF
Port $port
ListenAddress $addr
AddressFamily inet
HostKey $dir/${host}_host_key
PidFile $pidfile
AuthorizedKeysFile $dir/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
MaxStartups 64:30:128
MaxSessions 64
LogLevel ERROR
EOF
}

ssh_client_lines() {  # dir port: the client settings of a test host's ssh_config block, on stdout
  local dir=$1 port=$2
  cat <<EOF
  Port $port
  User $(id -un)
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  CheckHostIP no
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF
}
