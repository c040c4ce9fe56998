// agent: `launch --agent`, runs one rank on a remote host on behalf of ./launch (see agent.h).
#include "launcher/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/agent_protocol.h"
#include "launcher/env.h"
#include "launcher/fdio.h"
#include "launcher/process.h"
#include "launcher/watchdog.h"

namespace {

using Clock = std::chrono::steady_clock;

int g_sig_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_sig_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

void agent_error(const std::string& msg) {
  std::string line = "launch --agent: " + msg + "\n";
  write_all(2, line);
}

// Reads exactly n bytes from fd 0 before deadline. False on EOF, error or timeout.
bool read_exact(std::string* out, size_t n, Clock::time_point deadline) {
  out->clear();
  while (out->size() < n) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    struct pollfd p = {0, POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[65536];
    size_t want = std::min(sizeof buf, n - out->size());
    ssize_t got = read(0, buf, want);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    out->append(buf, static_cast<size_t>(got));
  }
  return true;
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

bool group_alive(pid_t pg) { return kill(-pg, 0) == 0 || errno == EPERM; }

}  // namespace

int agent_main() {
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of the rank come back to us to be reaped
  if (pipe2(g_sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    agent_error(std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  install_signal_handler(on_signal, {SIGCHLD, SIGTERM, SIGINT, SIGHUP});

  // 1. The spawn request.
  auto header_deadline = Clock::now() + std::chrono::seconds(60);
  std::string magic, len_bytes, body;
  size_t magic_len = std::strlen(kAgentMagic);
  if (!read_exact(&magic, magic_len, header_deadline) || magic != kAgentMagic) {
    agent_error("no spawn request from the launcher on stdin (is this `launch --agent` run by ./launch?)");
    return 2;
  }
  if (!read_exact(&len_bytes, 4, header_deadline)) {
    agent_error("truncated spawn request");
    return 2;
  }
  const unsigned char* lb = reinterpret_cast<const unsigned char*>(len_bytes.data());
  uint32_t len = (uint32_t(lb[0]) << 24) | (uint32_t(lb[1]) << 16) | (uint32_t(lb[2]) << 8) | uint32_t(lb[3]);
  AgentRequest req;
  if (len > kAgentMaxFrame || !read_exact(&body, len, header_deadline) || !decode_agent_request(body, &req)) {
    agent_error("malformed spawn request");
    return 2;
  }
  body.clear();

  // 2. The rank's environment: ours (the remote login's), overlaid with the launcher's.
  std::vector<std::string> env = current_environment();
  for (const std::string& e : req.env) env_set(&env, e.substr(0, e.find('=')), e.substr(e.find('=') + 1));
  bool user_set_blas = false;
  for (const std::string& e : req.env)
    if (e.compare(0, 21, "OPENBLAS_NUM_THREADS=") == 0) user_set_blas = true;
  if (req.openblas_local_size > 0 && !user_set_blas)
    env_set(&env, "OPENBLAS_NUM_THREADS", std::to_string(std::max(1, cpu_count() / req.openblas_local_size)));
  std::string path_var;
  env_find(env, "PATH", &path_var);
  std::string why;
  std::string prog = find_executable(req.argv[0], path_var, &why);
  if (prog.empty()) {
    agent_error("cannot run '" + req.argv[0] + "' on this host: " + why);
    write_all(2, agent_status_line(req.nonce, 127 << 8));
    return 127;
  }
  std::vector<std::string> argv = req.argv;
  argv[0] = prog;
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // 3. Fork the rank; it waits until its pid line is out so that line precedes all its output.
  //    A watchdog (see watchdog.h) takes the rank's whole group down should this agent be killed.
  Watchdog watchdog;
  try {
    watchdog.start(2000);
  } catch (const std::exception& e) {
    agent_error(std::string("cannot start the watchdog: ") + e.what());
    return 1;
  }
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) {
    agent_error(std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t agent_pid = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // If the agent itself is killed (kill -9), take the rank down with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent_pid) _exit(127);
    char b;
    while (read(go[0], &b, 1) < 0 && errno == EINTR) {
    }
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    if (devnull >= 0) dup2(devnull, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(cargv[0], cargv.data(), cenv.data());
    const char* msg = "launch --agent: exec failed: ";
    ssize_t ignored = write(2, msg, std::strlen(msg));
    const char* es = std::strerror(errno);
    ignored = write(2, es, std::strlen(es));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(127);
  }
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(go[0]);
  if (devnull >= 0) close(devnull);
  if (pid < 0) {
    agent_error(std::string("fork: ") + std::strerror(fork_errno));
    return 1;
  }
  setpgid(pid, pid);
  watchdog.watch(pid);
  write_all(2, agent_pid_line(req.nonce, pid));
  ssize_t ignored = write(go[1], "g", 1);
  (void)ignored;
  close(go[1]);

  // 4. Supervise.
  const auto grace = std::chrono::milliseconds(3000);
  bool stdin_open = true, rank_done = false, leftovers_signalled = false;
  int rank_status = 0;
  Clock::time_point kill_at = Clock::time_point::max();      // SIGKILL the group (after EOF)
  Clock::time_point leftover_kill_at = Clock::time_point::max();
  set_nonblocking(0);
  while (true) {
    auto now = Clock::now();
    if (rank_done) {
      if (!group_alive(pid)) break;
      if (!leftovers_signalled) {
        kill(-pid, SIGTERM);
        leftovers_signalled = true;
        leftover_kill_at = now + std::chrono::milliseconds(1000);
      } else if (now >= leftover_kill_at) {
        kill(-pid, SIGKILL);
        leftover_kill_at = now + std::chrono::milliseconds(200);
      }
    }
    if (now >= kill_at) {
      kill(-pid, SIGKILL);
      kill_at = now + std::chrono::milliseconds(500);
    }
    struct pollfd p[2];
    int np = 0;
    p[np++] = {g_sig_pipe[0], POLLIN, 0};
    if (stdin_open) p[np++] = {0, POLLIN, 0};
    int r = poll(p, np, 50);
    if (r < 0 && errno != EINTR) break;
    unsigned char sigs[64];
    ssize_t ns;
    while ((ns = read(g_sig_pipe[0], sigs, sizeof sigs)) > 0) {
      for (ssize_t k = 0; k < ns; ++k) {
        int s = sigs[k];
        if (s == SIGCHLD) continue;
        kill(-pid, s);  // forward SIGTERM / SIGINT / SIGHUP
      }
    }
    // Reap the rank and any orphans that came to us.
    while (true) {
      int st;
      pid_t w = waitpid(-1, &st, WNOHANG);
      if (w <= 0) break;
      if (w == pid) {
        rank_done = true;
        rank_status = st;
      }
      if (w == watchdog.pid()) watchdog.forget();
    }
    if (stdin_open) {
      char buf[256];
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0) {
        for (ssize_t k = 0; k < n; ++k) {
          int s = agent_control_signal(buf[k]);
          if (s) kill(-pid, s);
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        stdin_open = false;  // launcher gone or ssh session lost: stop the rank
        if (!rank_done) {
          kill(-pid, SIGTERM);
          kill_at = Clock::now() + grace;
        }
      }
    }
  }
  watchdog.unwatch(pid);
  watchdog.stop();
  write_all(2, agent_status_line(req.nonce, rank_status));
  return wait_status_code(rank_status);
}
