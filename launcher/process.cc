// process: PATH lookup, fork+exec with pipes and process groups, run-and-capture, and wait
// status names (see process.h).
#include "launcher/process.h"

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

#include "launcher/env.h"
#include "launcher/fdio.h"

using Clock = std::chrono::steady_clock;

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

// Both ends of the child's stdin, stdout, stderr, exec-status and (held) go pipes ({-1, -1} when
// unused).
struct ChildPipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1}, go[2] = {-1, -1};
  int devnull = -1;
};

void open_child_pipes(const SpawnSpec& spec, ChildPipes* p) {
  if (spec.stdin_pipe) make_pipe(p->in);
  if (spec.capture_output) {
    make_pipe(p->out);
    make_pipe(p->err);
  }
  make_pipe(p->status);
  if (spec.held) make_pipe(p->go);
  p->devnull = spec.stdin_pipe ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// The child after fork: async-signal-safe calls only. Writes exec's errno to the status pipe.
[[noreturn]] void exec_child(const SpawnSpec& spec, const char* prog, char** argv, char** envp, const ChildPipes& p,
                             pid_t parent) {
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
    dup2(p.in[0], 0);
  } else if (p.devnull >= 0) {
    dup2(p.devnull, 0);
  }
  if (spec.capture_output) {
    dup2(p.out[1], 1);
    dup2(p.err[1], 2);
  }
  if (spec.held) {
    char b;
    while (read(p.go[0], &b, 1) < 0 && errno == EINTR) {}
  }
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(prog, argv, envp);
  int e = errno;
  ssize_t ignored = write(p.status[1], &e, sizeof e);
  (void)ignored;
  _exit(127);
}

void close_child_ends(ChildPipes* p) {
  if (p->devnull >= 0) close(p->devnull);
  close_fd(&p->in[0]);
  close_fd(&p->out[1]);
  close_fd(&p->err[1]);
  close_fd(&p->status[1]);
  close_fd(&p->go[0]);
}

void close_our_ends(ChildPipes* p) {
  close_fd(&p->in[1]);
  close_fd(&p->out[0]);
  close_fd(&p->err[0]);
  close_fd(&p->go[1]);
}

// exec's errno as the child reported it on *status_fd, or 0 when exec succeeded (the pipe closed
// empty).
int read_exec_errno(int* status_fd) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(*status_fd, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(status_fd);
  return n == static_cast<ssize_t>(sizeof child_errno) ? child_errno : 0;
}

}  // namespace

SpawnedChild spawn_process(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("spawn_process: empty argv");
  std::vector<char*> argv = c_strings(spec.argv);
  const std::string& prog = spec.path.empty() ? spec.argv[0] : spec.path;
  std::vector<char*> envp = c_strings(spec.env);
  ChildPipes p;
  open_child_pipes(spec, &p);
  // Block signals across fork so no handler of ours runs in the child before exec.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) exec_child(spec, prog.c_str(), argv.data(), envp.data(), p, parent);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close_child_ends(&p);
  if (pid < 0) {
    close_our_ends(&p);
    close_fd(&p.status[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(fork_errno));
  }
  if (spec.new_process_group) setpgid(pid, pid);  // both sides, so a kill(-pid) right away works
  SpawnedChild c;
  if (spec.held) {
    c.go_fd = p.go[1];
    c.status_fd = p.status[0];
  } else if (int child_errno = read_exec_errno(&p.status[0])) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    close_our_ends(&p);
    throw std::runtime_error("cannot run '" + prog + "': " + std::strerror(child_errno));
  }
  c.pid = pid;
  c.in_fd = p.in[1];
  c.out_fd = p.out[0];
  c.err_fd = p.err[0];
  for (int fd : {c.in_fd, c.out_fd, c.err_fd})
    if (fd >= 0) set_nonblocking(fd);
  return c;
}

int release_child(SpawnedChild* c) {
  ssize_t ignored = write(c->go_fd, "g", 1);
  (void)ignored;
  close_fd(&c->go_fd);
  return read_exec_errno(&c->status_fd);
}

namespace {

// Reads c's output until it exited and closed both pipes (true, *status set) or deadline (false).
bool capture_until_exit(SpawnedChild* c, Clock::time_point deadline, std::string* o, std::string* e, int* status,
                        bool* exited) {
  while (true) {
    struct pollfd p[2];
    int np = 0;
    if (c->out_fd >= 0) p[np++] = {c->out_fd, POLLIN, 0};
    if (c->err_fd >= 0) p[np++] = {c->err_fd, POLLIN, 0};
    if (!*exited && waitpid(c->pid, status, WNOHANG) == c->pid) *exited = true;
    if (*exited && np == 0) return true;
    auto now = Clock::now();
    if (now >= deadline) return false;
    int wait_ms = static_cast<int>(
        std::min<long>(50, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    if (np > 0)
      poll(p, np, wait_ms);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(wait_ms, 10)));
    drain_into(&c->out_fd, o);
    drain_into(&c->err_fd, e);
  }
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
  int status = 0;
  bool exited = false;
  bool timed_out = !capture_until_exit(&c, Clock::now() + timeout, &o, &e, &status, &exited);
  if (timed_out) {
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
    if (!exited) waitpid(c.pid, &status, 0);
  }
  close_fd(&c.out_fd);
  close_fd(&c.err_fd);
  if (out) *out = o;
  if (err) *err = timed_out ? "timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s" : e;
  return timed_out ? -1 : status;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
    default:
      return "signal " + std::to_string(sig);
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
