// ssh: the ssh command lines ./launch builds (for a remote rank's agent, for mpirun's
// plm_rsh_args), shell quoting for them, and `ssh -G` host resolution.
#pragma once
#include <string>
#include <vector>

struct SshOptions {
  std::string port, identity, config;  // -p, -i, -F as given to ./launch
  int connect_timeout = 10;            // seconds, ConnectTimeout
  int server_alive_interval = 0;       // seconds, ServerAliveInterval (0 = not passed)
  int server_alive_count = 3;          // ServerAliveCountMax, with the interval
};
// ServerAlive settings that end a silent ssh link after about heartbeat_timeout_s.
void set_server_alive(SshOptions* o, double heartbeat_timeout_s);
// "ssh -o BatchMode=yes -o ConnectTimeout=N [-o ServerAliveInterval=S -o ServerAliveCountMax=C]
// [-p P] [-i I] [-F F]" (host and command not included).
std::vector<std::string> ssh_base_argv(const SshOptions& o);
// The -F/-p/-i part alone, for mpirun's plm_rsh_args (unquoted: Open MPI splits it on whitespace,
// so callers reject paths with whitespace).
std::string ssh_user_args(const SshOptions& o);
// POSIX shell single-quoting ('a'\''b').
std::string shell_quote(const std::string& s);
// Joins argv for display, quoting words that need it.
std::string display_command(const std::vector<std::string>& argv);

// `ssh -G [opts] host` -> the value of its "hostname" line. Throws std::runtime_error.
std::string ssh_config_hostname(const SshOptions& o, const std::string& host);

// The last line of s without trailing blanks (ssh's reason, from its stderr).
std::string last_line(const std::string& s);
