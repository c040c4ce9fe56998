// slurm_scontrol: runs scontrol for the nodes' NodeAddr (see slurm_scontrol.h).
#include "comm/slurm_scontrol.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "comm/slurm_node_addr.h"
#include "src/shown_text.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Finished {
  int status = 0;      // waitpid's
  std::string output;  // stdout and stderr together
};

// Starts argv with stdin /dev/null and stdout+stderr into one pipe; collects the output until
// the pipe closes and reaps the child, killing it (only it: its own pid) at the deadline.
Finished run_collecting(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                        const std::string& what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(what + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(what + ": cannot run scontrol: " + std::strerror(rc) +
                             (rc == ENOENT ? " (it is not in PATH; it comes with Slurm's client tools)" : ""));
  }
  Finished f;
  const Clock::time_point deadline = Clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const long left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
    if (p.revents == 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (f.output.size() < (1u << 22)) f.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  while (::waitpid(pid, &f.status, 0) < 0 && errno == EINTR) {}
  if (timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout.count() / 1000.0);
    throw std::runtime_error(what + ": no answer within " + secs + " s (is slurmctld reachable from this node?)");
  }
  return f;
}

// "exit 1: slurm_load_node error: Invalid node name specified".
std::string failure(const Finished& f) {
  std::string first = f.output.substr(0, f.output.find('\n'));
  if (first.size() > 200) first = first.substr(0, 200) + "...";
  const std::string how = WIFEXITED(f.status) ? "exit " + std::to_string(WEXITSTATUS(f.status))
                                              : "killed by signal " + std::to_string(WTERMSIG(f.status));
  return how + (first.empty() ? "" : ": " + shown_text(first));
}

// addr as IPv4: a literal as it is, a host name through getaddrinfo.
std::string ipv4_of_node_addr(const std::string& node, const std::string& addr) {
  in_addr a;
  if (::inet_pton(AF_INET, addr.c_str(), &a) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(addr.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    throw std::runtime_error("node " + node + "'s NodeAddr " + addr +
                             " does not resolve to an IPv4 address: " + (rc != 0 ? gai_strerror(rc) : "no address"));
  char ip[INET_ADDRSTRLEN] = "";
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, ip, sizeof ip);
  ::freeaddrinfo(res);
  return ip;
}

}  // namespace

std::vector<std::string> slurm_node_ipv4s(const std::vector<std::string>& nodes, std::chrono::milliseconds timeout) {
  std::string list;
  for (const std::string& n : nodes) list += (list.empty() ? "" : ",") + n;
  const std::string what =
      "scontrol -o show node " + shown_text(list.size() > 200 ? list.substr(0, 200) + "..." : list);
  const Finished f = run_collecting({"scontrol", "-o", "show", "node", list}, timeout, what);
  if (!WIFEXITED(f.status) || WEXITSTATUS(f.status) != 0)
    throw std::runtime_error(what + " failed (" + failure(f) + ")");
  std::vector<std::string> addrs;
  try {
    addrs = parse_scontrol_node_addrs(f.output, nodes);
  } catch (const SlurmNodeAddrError& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
  for (size_t k = 0; k < nodes.size(); ++k) addrs[k] = ipv4_of_node_addr(nodes[k], addrs[k]);
  return addrs;
}
