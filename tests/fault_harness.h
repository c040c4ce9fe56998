// fault_harness: the process, data and checkpoint helpers of the end-to-end fault tests
// (tests/test_faults.cc, tests/test_launch_restarts.cc): a child with a deadline and its output in
// files (Proc), processes found through /proc by a marker in their argv, a job's ranks by their
// BARESGD_RANK, small real-MNIST subsets, and the checkpoint files of a --checkpoint-dir.
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "launcher/mpirun.h"
#include "tests/test_util.h"

extern char** environ;

namespace faultharness {

using Clock = std::chrono::steady_clock;
using testutil::read_file;
using testutil::write_file;

inline double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

inline int count_of(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\n') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

inline std::string abs_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

inline std::string unique_marker() {
  static int n = 0;
  return "bsgdfault" + std::to_string(::getpid()) + "x" + std::to_string(++n) + "x" +
         std::to_string(Clock::now().time_since_epoch().count() % 1000000);
}

// ---- processes ---------------------------------------------------------------------------------

// Live (not zombie) processes other than us whose command line contains text.
inline std::vector<pid_t> procs_with(const std::string& text) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == ::getpid()) continue;
    std::string cmd = read_file("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmd.empty()) continue;
    std::string stat = read_file("/proc/" + std::string(e->d_name) + "/stat");
    size_t rp = stat.rfind(')');
    if (rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] == 'Z') continue;
    if (contains(cmd, text)) out.push_back(pid_t(pid));
  }
  ::closedir(d);
  return out;
}

// Seconds until no process carries text, or -1 after timeout_s.
inline double wait_no_procs(const std::string& text, double timeout_s) {
  auto t0 = Clock::now();
  while (secs_since(t0) < timeout_s) {
    if (procs_with(text).empty()) return secs_since(t0);
    ::usleep(50 * 1000);
  }
  return procs_with(text).empty() ? secs_since(t0) : -1;
}

inline void kill_procs_with(const std::string& text) {
  for (pid_t p : procs_with(text)) ::kill(p, SIGKILL);
}

// The ranks of a job: processes carrying marker whose environment has BARESGD_RANK (the
// launcher itself has none); rank -> pid.
inline std::map<int, pid_t> rank_pids(const std::string& marker) {
  std::map<int, pid_t> out;
  for (pid_t p : procs_with(marker)) {
    std::string env = read_file("/proc/" + std::to_string(p) + "/environ");
    size_t at = env.find("BARESGD_RANK=");
    if (at == std::string::npos || (at > 0 && env[at - 1] != '\0')) continue;
    out[std::atoi(env.c_str() + at + 13)] = p;
  }
  return out;
}

inline char proc_state(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t rp = stat.rfind(')');
  return rp != std::string::npos && rp + 2 < stat.size() ? stat[rp + 2] : '?';
}

// A child process (own process group) with stdout/stderr in temp files and a deadline on wait.
class Proc {
 public:
  explicit Proc(const std::vector<std::string>& argv) {
    dir_ = testutil::make_temp_dir("faultproc");
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    // Loopback only for anything Open MPI (docs/testing.md), as the launcher pins it; harmless for Gloo.
    for (const auto& [name, value] : loopback_openmpi_env()) env.push_back(name + "=" + value);
    const int fo = testutil::open_output(dir_ + "/out"), fe = testutil::open_output(dir_ + "/err");
    start_ = Clock::now();
    pid_ = testutil::spawn(argv, env, -1, fo, fe);
    ::close(fo);
    ::close(fe);
  }
  ~Proc() {
    if (!reaped_) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const { return read_file(dir_ + "/out"); }
  std::string err() const { return read_file(dir_ + "/err"); }
  bool running() {
    poll();
    return !reaped_;
  }
  // Exit code (128+signal for a signal); -1 when the deadline passed (the group is then killed).
  int code(double timeout_s) {
    auto t0 = Clock::now();
    while (!reaped_) {
      poll();
      if (reaped_) break;
      if (secs_since(t0) > timeout_s) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        int st;
        ::waitpid(pid_, &st, 0);
        reaped_ = true;
        timed_out_ = true;
        elapsed_ = secs_since(start_);
        return -1;
      }
      ::usleep(5 * 1000);
    }
    if (timed_out_) return -1;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  double elapsed() const { return elapsed_; }
  // Seconds (since `since`) until re matches stdout or stderr, or -1 after timeout_s.
  double wait_for(const std::regex& re, double timeout_s, bool on_stderr, Clock::time_point since) {
    auto t0 = Clock::now();
    for (;;) {
      if (std::regex_search(on_stderr ? err() : out(), re)) return secs_since(since);
      if (secs_since(t0) > timeout_s) return -1;
      if (!running() && !std::regex_search(on_stderr ? err() : out(), re)) return -1;
      ::usleep(10 * 1000);
    }
  }

 private:
  void poll() {
    if (reaped_) return;
    int st;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = st;
      elapsed_ = secs_since(start_);
    }
  }
  std::string dir_;
  pid_t pid_ = -1;
  Clock::time_point start_;
  bool reaped_ = false, timed_out_ = false;
  int status_ = 0;
  double elapsed_ = 0;
};

// ---- data --------------------------------------------------------------------------------------

using testutil::be32;
using testutil::idx_images;
using testutil::idx_labels;

inline const char* const kFiles[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                      "t10k-labels-idx1-ubyte"};

inline std::string real_raw_dir() { return abs_path("data/MNIST/raw"); }

// dir/ with symlinks to the real MNIST files (a unique --data-dir that marks the job's argv).
inline void link_real_mnist(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  for (const char* f : kFiles) ::symlink((real_raw_dir() + "/" + f).c_str(), (dir + "/" + f).c_str());
}

// dir/ with the first ntrain / ntest samples of real MNIST (small epochs, real learning).
inline void write_mnist_subset(const std::string& dir, uint32_t ntrain, uint32_t ntest) {
  ::mkdir(dir.c_str(), 0755);
  for (int split = 0; split < 2; ++split) {
    const uint32_t n = split == 0 ? ntrain : ntest;
    const std::string im = read_file(real_raw_dir() + "/" + kFiles[2 * split]);
    const std::string lb = read_file(real_raw_dir() + "/" + kFiles[2 * split + 1]);
    ASSERT_GE(im.size(), 16 + size_t(n) * 784);
    ASSERT_GE(lb.size(), 8 + size_t(n));
    write_file(dir + "/" + kFiles[2 * split],
               im.substr(0, 4) + be32(n) + im.substr(8, 8) + im.substr(16, size_t(n) * 784));
    write_file(dir + "/" + kFiles[2 * split + 1], lb.substr(0, 4) + be32(n) + lb.substr(8, n));
  }
}

// ---- checkpoints -------------------------------------------------------------------------------

// Checkpoint files in dir: step -> path (only complete ckpt-<run id>-<digits>.bin names, or an
// older baresgd's ckpt-<digits>.bin).
inline std::map<long long, std::string> checkpoints_in(const std::string& dir) {
  std::map<long long, std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::regex re("^ckpt-(?:[0-9a-f]{16}-)?(\\d{1,18})\\.bin$");
  while (dirent* e = ::readdir(d)) {
    std::smatch m;
    std::string name = e->d_name;
    if (std::regex_match(name, m, re)) out[std::stoll(m[1])] = dir + "/" + name;
  }
  ::closedir(d);
  return out;
}

// Waits until a checkpoint with step > min_step exists and at least `count` distinct checkpoint
// steps were seen; returns the newest step then, or -1 when the job ended or the deadline passed.
inline long long wait_for_checkpoint(Proc& p, const std::string& dir, long long min_step, int count, double timeout_s) {
  std::map<long long, bool> seen;
  auto t0 = Clock::now();
  while (secs_since(t0) < timeout_s) {
    auto c = checkpoints_in(dir);
    for (auto& kv : c) seen[kv.first] = true;
    if (!c.empty() && c.rbegin()->first > min_step && int(seen.size()) >= count) return c.rbegin()->first;
    if (!p.running()) return -1;
    ::usleep(2 * 1000);
  }
  return -1;
}

inline std::string last_test_line(const std::string& out) {
  std::string last;
  for (const std::string& l : lines_of(out))
    if (contains(l, "Test set: Average loss")) last = l;
  return last;
}

}  // namespace faultharness
