// test_util: shared helpers for the suite: temp dirs, running a command with a deadline and
// capturing its output, and locating the built binaries (BARESGD_TRAIN / BARESGD_LAUNCH).
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace testutil {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
inline std::string train_bin() { return env_or("BARESGD_TRAIN", "./train"); }
inline std::string launch_bin() { return env_or("BARESGD_LAUNCH", "./launch"); }
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

struct RunResult {
  int status = -1;        // exit code, or 128+signal; -1 when the deadline killed it
  bool timed_out = false;
  std::string out, err;   // stdout, stderr
  double seconds = 0;
};

// Runs `sh -c cmd` with a deadline; output captured through temp files (no pipe deadlocks).
inline RunResult run(const std::string& cmd, double timeout_s = 120) {
  RunResult r;
  std::string dir = make_temp_dir("run");
  std::string o = dir + "/out", e = dir + "/err";
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    std::freopen(o.c_str(), "w", stdout);
    std::freopen(e.c_str(), "w", stderr);
    std::freopen("/dev/null", "r", stdin);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  int st = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (el > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      r.timed_out = true;
      break;
    }
    ::usleep(10000);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out) r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = read_file(o);
  r.err = read_file(e);
  std::system(("rm -rf '" + dir + "'").c_str());
  return r;
}

// Synthetic IDX files for the data tests: big-endian u32, images (pixel i = 7i mod 256), labels i%10.
inline std::string be32(uint32_t v) {
  return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

inline std::string idx_images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28,
                              uint32_t magic = 0x803) {
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
