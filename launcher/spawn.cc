// spawn: fork+exec with pipes and process groups, ssh command lines, ssh -G and the parallel ssh
// reachability check (see spawn.h).
#include "launcher/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

extern char** environ;

using Clock = std::chrono::steady_clock;

void set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void set_cloexec(int fd) {
  int fl = fcntl(fd, F_GETFD);
  if (fl >= 0) fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, 1000);
      continue;
    }
    return false;
  }
  return true;
}

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void install_signal_handler(void (*handler)(int), std::initializer_list<int> signals) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : signals) sigaction(s, &sa, nullptr);
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

void env_set(std::vector<std::string>* env, const std::string& name, const std::string& value) {
  std::string prefix = name + "=";
  for (auto& e : *env) {
    if (e.compare(0, prefix.size(), prefix) == 0) {
      e = prefix + value;
      return;
    }
  }
  env->push_back(prefix + value);
}

const std::string* env_find(const std::vector<std::string>& env, const std::string& name, std::string* value) {
  std::string prefix = name + "=";
  for (const auto& e : env) {
    if (e.compare(0, prefix.size(), prefix) == 0) {
      if (value) *value = e.substr(prefix.size());
      return &e;
    }
  }
  return nullptr;
}

std::string find_executable(const std::string& cmd, const std::string& path_var, std::string* why) {
  auto usable = [&](const std::string& p, std::string* reason) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      *reason = std::strerror(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      *reason = "is a directory";
      return false;
    }
    if (access(p.c_str(), X_OK) != 0) {
      *reason = "not executable";
      return false;
    }
    return true;
  };
  std::string reason;
  if (cmd.find('/') != std::string::npos) {
    if (usable(cmd, &reason)) return cmd;
    if (why) *why = reason;
    return "";
  }
  std::string path = path_var.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_var;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    std::string dir = path.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + cmd;
    std::string r;
    if (usable(cand, &r)) return cand;
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  if (why) *why = "command not found in PATH";
  return "";
}

std::string self_exe_path() {
  char buf[PATH_MAX + 1];
  ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
}

}  // namespace

SpawnedChild spawn_process(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("spawn_process: empty argv");
  std::vector<char*> argv = c_strings(spec.argv);
  const std::string& prog = spec.path.empty() ? spec.argv[0] : spec.path;
  std::vector<char*> envp = c_strings(spec.env);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status_pipe[2] = {-1, -1};
  if (spec.stdin_pipe) make_pipe(in);
  if (spec.capture_output) {
    make_pipe(out);
    make_pipe(err);
  }
  make_pipe(status_pipe);
  int devnull = spec.stdin_pipe ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);

  // Block signals across fork so no handler of ours runs in the child before exec.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    if (spec.new_process_group) setpgid(0, 0);
    if (spec.pdeathsig) {
      prctl(PR_SET_PDEATHSIG, spec.pdeathsig);
      if (getppid() != parent) _exit(127);  // the launcher died before prctl
    }
    for (int s = 1; s < NSIG; ++s) {
      if (s == SIGKILL || s == SIGSTOP) continue;
      signal(s, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    if (spec.stdin_pipe) {
      dup2(in[0], 0);
    } else if (devnull >= 0) {
      dup2(devnull, 0);
    }
    if (spec.capture_output) {
      dup2(out[1], 1);
      dup2(err[1], 2);
    }
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(prog.c_str(), argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = write(status_pipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (devnull >= 0) close(devnull);
  close_fd(&in[0]);
  close_fd(&out[1]);
  close_fd(&err[1]);
  close_fd(&status_pipe[1]);
  if (pid < 0) {
    close_fd(&in[1]);
    close_fd(&out[0]);
    close_fd(&err[0]);
    close_fd(&status_pipe[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(fork_errno));
  }
  if (spec.new_process_group) setpgid(pid, pid);  // both sides, so a kill(-pid) right away works
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(status_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(&status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    close_fd(&in[1]);
    close_fd(&out[0]);
    close_fd(&err[0]);
    throw std::runtime_error("cannot run '" + prog + "': " + std::strerror(child_errno));
  }
  SpawnedChild c;
  c.pid = pid;
  c.in_fd = in[1];
  c.out_fd = out[0];
  c.err_fd = err[0];
  for (int fd : {c.in_fd, c.out_fd, c.err_fd})
    if (fd >= 0) set_nonblocking(fd);
  return c;
}

std::vector<std::string> ssh_base_argv(const SshOptions& o) {
  std::vector<std::string> a = {"ssh", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(std::max(1, o.connect_timeout))};
  if (!o.port.empty()) a.insert(a.end(), {"-p", o.port});
  if (!o.identity.empty()) a.insert(a.end(), {"-i", o.identity});
  if (!o.config.empty()) a.insert(a.end(), {"-F", o.config});
  return a;
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
    if (c == '\'') out += "'\\''";
    else out += c;
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

namespace {

void drain_into(int* fd, std::string* sink) {
  if (*fd < 0) return;
  char buf[4096];
  while (true) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      if (sink->size() < (1u << 20)) sink->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(fd);  // EOF or error
    return;
  }
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  size_t nl = t.find_last_of("\r\n");
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

int run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::string* out,
                std::string* err) {
  SpawnSpec spec;
  std::string why;
  std::string prog = find_executable(argv[0], getenv("PATH") ? getenv("PATH") : "", &why);
  if (prog.empty()) {
    if (err) *err = argv[0] + ": " + why;
    return -1;
  }
  spec.argv = argv;
  spec.argv[0] = prog;
  spec.env = current_environment();
  SpawnedChild c;
  try {
    c = spawn_process(spec);
  } catch (const std::exception& e) {
    if (err) *err = e.what();
    return -1;
  }
  std::string o, e;
  auto deadline = Clock::now() + timeout;
  int status = 0;
  bool exited = false, timed_out = false;
  while (true) {
    struct pollfd p[2];
    int np = 0;
    if (c.out_fd >= 0) p[np++] = {c.out_fd, POLLIN, 0};
    if (c.err_fd >= 0) p[np++] = {c.err_fd, POLLIN, 0};
    if (!exited) {
      pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) exited = true;
    }
    if (exited && np == 0) break;
    auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    int wait_ms = static_cast<int>(std::min<long>(50, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    if (np > 0) {
      poll(p, np, wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(wait_ms, 10)));
    }
    drain_into(&c.out_fd, &o);
    drain_into(&c.err_fd, &e);
  }
  if (timed_out) {
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
    if (!exited) waitpid(c.pid, &status, 0);
  }
  close_fd(&c.out_fd);
  close_fd(&c.err_fd);
  if (out) *out = o;
  if (err) *err = e;
  if (timed_out) {
    if (err) *err = "timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s";
    return -1;
  }
  return status;
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
    throw std::runtime_error("ssh -G " + host + " failed: " + (last_line(err).empty() ? "status " + std::to_string(st) : last_line(err)));
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

std::vector<std::string> check_ssh_hosts(const SshOptions& o, const std::vector<std::string>& hosts,
                                         Clock::time_point deadline, const std::function<bool()>& cancelled) {
  struct Check {
    std::string host;
    int attempt = 0;
    pid_t pid = -1;
    int out_fd = -1, err_fd = -1;
    std::string err_text;
    Clock::time_point next_start;
    bool done = false;
    std::string result;  // reason, empty = reachable
  };
  const int kAttempts = 3;
  std::vector<Check> checks(hosts.size());
  auto start_time = Clock::now();
  for (size_t k = 0; k < hosts.size(); ++k) {
    checks[k].host = hosts[k];
    checks[k].next_start = start_time;
  }
  std::string ssh_path = find_executable("ssh", getenv("PATH") ? getenv("PATH") : "", nullptr);
  if (ssh_path.empty()) return std::vector<std::string>(hosts.size(), "ssh not found in PATH");

  auto retryable = [](const std::string& why) {
    static const char* kFinal[] = {"Permission denied", "Host key verification failed", "Could not resolve",
                                   "REMOTE HOST IDENTIFICATION HAS CHANGED", "No such file", "Bad configuration",
                                   "Too many authentication failures"};
    for (const char* f : kFinal)
      if (why.find(f) != std::string::npos) return false;
    return true;
  };

  while (true) {
    auto now = Clock::now();
    bool all_done = true;
    for (Check& c : checks) {
      if (c.done) continue;
      all_done = false;
      if (c.pid < 0 && now >= c.next_start) {
        double left = std::chrono::duration<double>(deadline - now).count();
        SshOptions so = o;
        so.connect_timeout = std::max(1, std::min(o.connect_timeout, static_cast<int>(left)));
        SpawnSpec spec;
        spec.argv = ssh_base_argv(so);
        spec.argv[0] = ssh_path;
        spec.argv.push_back(c.host);
        spec.argv.push_back("true");
        spec.env = current_environment();
        try {
          SpawnedChild sc = spawn_process(spec);
          c.pid = sc.pid;
          c.out_fd = sc.out_fd;
          c.err_fd = sc.err_fd;
          c.err_text.clear();
          c.attempt++;
        } catch (const std::exception& e) {
          c.done = true;
          c.result = e.what();
        }
      }
    }
    if (all_done) break;
    bool cancel = cancelled && cancelled();
    if (now >= deadline || cancel) {
      for (Check& c : checks) {
        if (c.done) continue;
        if (c.pid > 0) {
          kill(-c.pid, SIGKILL);
          waitpid(c.pid, nullptr, 0);
          c.pid = -1;
        }
        close_fd(&c.out_fd);
        close_fd(&c.err_fd);
        c.done = true;
        double secs = std::chrono::duration<double>(now - start_time).count();
        char buf[64];
        snprintf(buf, sizeof buf, "%.1f", secs);
        std::string last = last_line(c.err_text);
        c.result = cancel ? "cancelled"
                          : "no answer within " + std::string(buf) + " s (--start-timeout)" + (last.empty() ? "" : ": " + last);
      }
      break;
    }
    std::vector<struct pollfd> p;
    for (Check& c : checks) {
      if (c.out_fd >= 0) p.push_back({c.out_fd, POLLIN, 0});
      if (c.err_fd >= 0) p.push_back({c.err_fd, POLLIN, 0});
    }
    if (!p.empty()) poll(p.data(), p.size(), 20);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (Check& c : checks) {
      if (c.done || c.pid < 0) continue;
      std::string ignored;
      drain_into(&c.out_fd, &ignored);
      drain_into(&c.err_fd, &c.err_text);
      int st;
      if (waitpid(c.pid, &st, WNOHANG) != c.pid) continue;
      drain_into(&c.out_fd, &ignored);
      drain_into(&c.err_fd, &c.err_text);
      close_fd(&c.out_fd);
      close_fd(&c.err_fd);
      c.pid = -1;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        c.done = true;
        c.result.clear();
        continue;
      }
      std::string why = last_line(c.err_text);
      if (why.empty()) why = "ssh " + describe_wait_status(st);
      if (c.attempt >= kAttempts || !retryable(why)) {
        c.done = true;
        c.result = why;
      } else {
        c.result = why;
        c.next_start = Clock::now() + std::chrono::milliseconds(250 << c.attempt);  // 0.5 s, 1 s
        if (c.next_start >= deadline) {
          c.done = true;
        }
      }
    }
  }
  std::vector<std::string> out;
  for (Check& c : checks) out.push_back(c.result);
  return out;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    return "was killed by signal " + std::to_string(s) + " (" + signal_name(s) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

int wait_status_code(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1;
}
