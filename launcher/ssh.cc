// ssh: ssh command lines, shell quoting and `ssh -G` (see ssh.h).
#include "launcher/ssh.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "launcher/process.h"

std::vector<std::string> ssh_base_argv(const SshOptions& o) {
  std::vector<std::string> a = {"ssh", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(std::max(1, o.connect_timeout))};
  if (o.server_alive_interval > 0)
    a.insert(a.end(), {"-o", "ServerAliveInterval=" + std::to_string(o.server_alive_interval), "-o",
                       "ServerAliveCountMax=" + std::to_string(o.server_alive_count)});
  if (!o.port.empty()) a.insert(a.end(), {"-p", o.port});
  if (!o.identity.empty()) a.insert(a.end(), {"-i", o.identity});
  if (!o.config.empty()) a.insert(a.end(), {"-F", o.config});
  return a;
}

void set_server_alive(SshOptions* o, double heartbeat_timeout_s) {
  o->server_alive_count = 3;
  o->server_alive_interval = std::max(1, static_cast<int>(std::ceil(heartbeat_timeout_s / 3)));
}

std::string ssh_user_args(const SshOptions& o) {
  std::string s;
  auto add = [&](const std::string& flag, const std::string& v) {
    if (v.empty()) return;
    if (!s.empty()) s += " ";
    s += flag + " " + v;  // Open MPI splits plm_rsh_args on whitespace; it does not unquote
  };
  add("-F", o.config);
  add("-p", o.port);
  add("-i", o.identity);
  return s;
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-' || c == '+' ||
          c == ',' || c == ':' || c == '=' || c == '@' || c == '%')) {
      plain = false;
      break;
    }
  }
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string display_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  size_t nl = t.find_last_of("\r\n");
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string ssh_config_hostname(const SshOptions& o, const std::string& host) {
  std::vector<std::string> argv = {"ssh", "-G"};
  if (!o.port.empty()) argv.insert(argv.end(), {"-p", o.port});
  if (!o.identity.empty()) argv.insert(argv.end(), {"-i", o.identity});
  if (!o.config.empty()) argv.insert(argv.end(), {"-F", o.config});
  argv.push_back(host);
  std::string out, err;
  int st = run_capture(argv, std::chrono::milliseconds(10000), &out, &err);
  if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw std::runtime_error("ssh -G " + host +
                             " failed: " + (last_line(err).empty() ? "status " + std::to_string(st) : last_line(err)));
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.compare(0, 9, "hostname ") == 0) return line.substr(9);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  throw std::runtime_error("ssh -G " + host + " printed no hostname line");
}
