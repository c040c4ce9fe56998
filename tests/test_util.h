// test_util: shared helpers for the suite: temp dirs, running a command with a deadline and
// capturing its output, and locating the built binaries (BARESGD_TRAIN / BARESGD_LAUNCH /
// BARESGD_REFERENCE).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace testutil {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
inline std::string train_bin() { return env_or("BARESGD_TRAIN", "./train"); }
inline std::string launch_bin() { return env_or("BARESGD_LAUNCH", "./launch"); }
inline std::string reference_bin() { return env_or("BARESGD_REFERENCE", "./reference"); }
inline std::string tools_dir() { return env_or("BARESGD_TOOLS", "./build/tests"); }

inline std::string make_temp_dir(const std::string& tag) {
  std::string t = "/tmp/baresgd-" + tag + "-XXXXXX";
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) std::abort();
  return buf.data();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The state letter of a pid in /proc ('R', 'S', 'T', 'Z'...); 0 when there is no such process.
inline char process_state(long pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

// ---- processes with a deadline: output captured through temp files (no pipe deadlocks) ----

// The suite's one way to start a child: forks a process that leads its own process group (so a
// deadline can kill its whole group) with stdin, stdout and stderr on the given descriptors (in
// -1: /dev/null), and execs argv[0] (a path, no PATH lookup) with exactly env. A failed exec is
// one line on the child's stderr and exit 127; a descriptor that cannot be set up, exit 126.
// The caller closes its copies of the descriptors and reaps the child.
inline pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int in, int out,
                   int err) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const std::string exec_failed = "exec " + (argv.empty() ? std::string() : argv[0]) + ": ";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int stdin_fd = in >= 0 ? in : ::open("/dev/null", O_RDONLY);
    if (stdin_fd < 0 || out < 0 || err < 0 || ::dup2(stdin_fd, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
      ::_exit(126);
    ::execve(cargv[0], cargv.data(), cenv.data());
    const char* why = std::strerror(errno);
    if (::write(2, exec_failed.data(), exec_failed.size()) < 0 || ::write(2, why, std::strlen(why)) < 0 ||
        ::write(2, "\n", 1) < 0)
      ::_exit(127);
    ::_exit(127);
  }
  if (pid > 0) ::setpgid(pid, pid);
  return pid;
}

// A child's output file: created or truncated, close-on-exec in the parent (-1 when it cannot be).
inline int open_output(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

struct ProcSpec {
  std::vector<std::string> argv;  // argv[0] is a path (execve, no PATH lookup)
  std::vector<std::string> env;   // the whole environment, KEY=VALUE
};

struct ProcResult {
  int status = -1;  // exit code, 128+signal, or -1 if killed at the deadline
  std::string out, err;
};

struct RunAll {
  std::vector<ProcResult> procs;
  double seconds = 0;
  bool timed_out = false;
  std::string describe() const {
    std::string s;
    for (size_t i = 0; i < procs.size(); ++i)
      s += "--- process " + std::to_string(i) + " status " + std::to_string(procs[i].status) + "\nstdout:\n" +
           procs[i].out + "stderr:\n" + procs[i].err;
    return s;
  }
};

// Starts every process at once, each leading its own process group with stdin from /dev/null, and
// waits for all; after timeout_s the groups still running are killed (status -1, timed_out).
inline RunAll run_processes(const std::vector<ProcSpec>& specs, double timeout_s = 60) {
  const std::string dir = make_temp_dir("procs");
  RunAll res;
  res.procs.resize(specs.size());
  std::vector<pid_t> pids(specs.size(), -1);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < specs.size(); ++i) {
    const int out = open_output(dir + "/out" + std::to_string(i)), err = open_output(dir + "/err" + std::to_string(i));
    pids[i] = spawn(specs[i].argv, specs[i].env, -1, out, err);
    ::close(out);
    ::close(err);
  }
  size_t left = specs.size();
  while (left > 0) {
    for (size_t i = 0; i < specs.size(); ++i) {
      if (pids[i] < 0) continue;
      int st = 0;
      if (::waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        res.procs[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        pids[i] = -1;
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      res.timed_out = true;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (pids[i] < 0) continue;
        ::kill(-pids[i], SIGKILL);  // the process group of the child we started
        int st = 0;
        ::waitpid(pids[i], &st, 0);
        res.procs[i].status = -1;
        pids[i] = -1;
      }
      break;
    }
    ::usleep(5000);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < specs.size(); ++i) {
    res.procs[i].out = read_file(dir + "/out" + std::to_string(i));
    res.procs[i].err = read_file(dir + "/err" + std::to_string(i));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  return res;
}

inline std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  return env;
}

struct RunResult {
  int status = -1;  // exit code, or 128+signal; -1 when the deadline killed it
  bool timed_out = false;
  std::string out, err;  // stdout, stderr
  double seconds = 0;
};

// Runs `sh -c cmd` in this environment with a deadline.
inline RunResult run(const std::string& cmd, double timeout_s = 120) {
  RunAll all = run_processes({{{"/bin/sh", "-c", cmd}, current_environment()}}, timeout_s);
  RunResult r;
  r.status = all.procs[0].status;
  r.timed_out = all.timed_out;
  r.out = std::move(all.procs[0].out);
  r.err = std::move(all.procs[0].err);
  r.seconds = all.seconds;
  return r;
}

// Synthetic IDX files for the data tests: big-endian u32, images (pixel i = 7i mod 256), labels i%10.
inline std::string be32(uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

inline std::string idx_images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28, uint32_t magic = 0x803) {
  std::string s = be32(magic) + be32(n) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) s.push_back(char((i * 7) & 0xff));
  return s;
}

inline std::string idx_labels(uint32_t n, uint32_t magic = 0x801) {
  std::string s = be32(magic) + be32(n);
  for (uint32_t i = 0; i < n; ++i) s.push_back(char(i % 10));
  return s;
}

inline bool have_mnist(const std::string& dir = "data") {
  std::ifstream f(dir + "/MNIST/raw/train-images-idx3-ubyte");
  return f.good();
}

}  // namespace testutil
