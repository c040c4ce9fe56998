// launch_harness: what the ./launch test files (tests/test_launch_*.cc) share: locating ./launch
// and the tool programs (BARESGD_LAUNCH, BARESGD_TOOLS), processes found through /proc by a marker
// in their command line, the test environment (child_env: Open MPI pinned to loopback), a running
// ./launch with its output collected (Launch), and the fixtures LaunchLocal (ranks on this machine)
// and LaunchRemote (ranks on the sshd test hosts of tests/test_hosts.sh). Every child has a
// deadline; teardown kills what is left by its marker.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <climits>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/agent_protocol.h"
#include "launcher/env.h"
#include "launcher/hosts.h"
#include "launcher/job.h"
#include "launcher/job_plan.h"
#include "launcher/mpirun.h"
#include "launcher/shell_words.h"
#include "launcher/proctree.h"
#include "launcher/options.h"
#include "launcher/tagger.h"
#include "tests/go_file.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

extern char** environ;

using Clock = std::chrono::steady_clock;

namespace launchharness {

inline std::string launch_bin() {
  const char* p = getenv("BARESGD_LAUNCH");
  return p ? p : "./launch";
}

inline std::string tool(const std::string& name) {
  const char* d = getenv("BARESGD_TOOLS");
  return std::string(d ? d : "build/tests") + "/" + name;
}

inline std::string rank_tool() { return tool("tool_launch_rank"); }
inline std::string store_tool() { return tool("tool_launch_store"); }
inline std::string allreduce_tool() { return tool("tool_launch_allreduce"); }

inline std::string unique_marker() {
  static int n = 0;
  return "bsgdmark" + std::to_string(getpid()) + "x" + std::to_string(++n) + "x" +
         std::to_string(Clock::now().time_since_epoch().count() % 100000);
}

inline double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) {
      out.push_back(s.substr(pos));
      break;
    }
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Pids (not zombies, not us) whose command line contains text.
inline std::vector<pid_t> procs_with(const std::string& text) {
  std::vector<pid_t> out;
  for (pid_t pid : all_pids()) {
    if (pid == getpid() || !is_live_process(pid)) continue;
    std::string cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (!cmd.empty() && cmd.find(text) != std::string::npos) out.push_back(pid);  // empty: kernel thread
  }
  return out;
}

// Waits until no process carries text; returns seconds waited, or -1 on timeout.
inline double wait_no_procs(const std::string& text, double timeout_s) {
  auto t0 = Clock::now();
  while (secs_since(t0) < timeout_s) {
    if (procs_with(text).empty()) return secs_since(t0);
    usleep(50 * 1000);
  }
  return procs_with(text).empty() ? secs_since(t0) : -1;
}

// Waits until at least n processes carry text (true), or timeout_s passed (false).
inline bool wait_procs(const std::string& text, size_t n, double timeout_s) {
  auto t0 = Clock::now();
  while (procs_with(text).size() < n) {
    if (secs_since(t0) > timeout_s) return false;
    usleep(10 * 1000);
  }
  return true;
}

// The parent pid of pid (from /proc/<pid>/stat), or 0.
inline long ppid_of(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  long ppid = 0;
  char state;
  if (close == std::string::npos || sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) return 0;
  return ppid;
}

// Waits until pid's /proc state letter (testutil::process_state; '-' for no such process) is one of
// states (true), or timeout_s passed (false).
inline bool wait_state(pid_t pid, const std::string& states, double timeout_s) {
  auto t0 = Clock::now();
  for (;;) {
    const char s = testutil::process_state(pid);
    if (states.find(s ? s : '-') != std::string::npos) break;
    if (secs_since(t0) > timeout_s) return false;
    usleep(5 * 1000);
  }
  return true;
}

inline void kill_procs_with(const std::string& text) {
  for (pid_t p : procs_with(text)) kill(p, SIGKILL);
}

// Test-wide environment for children: Open MPI pinned to loopback (and no DNS lookups of test
// host names), whatever mode: the launcher's own loopback settings (mpirun.h).
inline std::vector<std::string> child_env(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    size_t eq = s.find('=');
    // Not our Slurm job's variables (a test run inside an allocation): tests set their own.
    if (eq != std::string::npos && s.rfind("SLURM_", 0) != 0) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const auto& [name, value] : loopback_openmpi_env()) env[name] = value;
  for (const auto& s : extra) {
    size_t eq = s.find('=');
    if (eq == std::string::npos)
      env.erase(s);
    else
      env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::vector<std::string> out;
  for (auto& kv : env) out.push_back(kv.first + "=" + kv.second);
  return out;
}

// A running ./launch with its stdout/stderr collected by a thread.
class Launch {
 public:
  Launch(const std::vector<std::string>& args, const std::vector<std::string>& env_extra = {},
         bool stdin_pipe = false) {
    std::vector<std::string> argv = {launch_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = child_env(env_extra);
    int out[2], err[2], in[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
    if (stdin_pipe && pipe2(in, O_CLOEXEC) != 0) abort();
    start_ = Clock::now();
    pid_ = testutil::spawn(argv, env, in[0], out[1], err[1]);  // its own group: a test can signal it alone
    close(out[1]);
    close(err[1]);
    if (in[0] >= 0) close(in[0]);
    in_fd_ = in[1];
    reader_ = std::thread([this, o = out[0], e = err[0]] { read_loop(o, e); });
  }
  ~Launch() {
    close_stdin();
    if (!reaped_) {
      kill(pid_, SIGKILL);
      wait(30);
    }
    stop_reader_ = true;  // the reader polls with a timeout, so this join cannot hang
    if (reader_.joinable()) reader_.join();
  }

  pid_t pid() const { return pid_; }
  void write_stdin(const std::string& data) {
    size_t pos = 0;
    while (in_fd_ >= 0 && pos < data.size()) {
      ssize_t w = write(in_fd_, data.data() + pos, data.size() - pos);
      if (w <= 0) break;
      pos += static_cast<size_t>(w);
    }
  }
  void close_stdin() {
    if (in_fd_ >= 0) close(in_fd_);
    in_fd_ = -1;
  }

  // Waits for the exit, at most timeout_s (then SIGKILL and returns -1). Returns the wait status.
  int wait(double timeout_s) {
    auto t0 = Clock::now();
    while (!reaped_) {
      int st;
      pid_t w = waitpid(pid_, &st, WNOHANG);
      if (w == pid_) {
        reaped_ = true;
        status_ = st;
        elapsed_ = secs_since(start_);
        exited_at_ = Clock::now();
        break;
      }
      if (secs_since(t0) > timeout_s) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        reaped_ = true;
        status_ = -1;
        timed_out_ = true;
        break;
      }
      usleep(5 * 1000);
    }
    // Output pipes close when everything holding them is gone; bounded wait.
    auto t1 = Clock::now();
    while (!reader_done_ && secs_since(t1) < 15) usleep(5 * 1000);
    if (reader_done_ && reader_.joinable()) reader_.join();
    return status_;
  }
  // Exit code (128+signal for a signal), -1 for a timeout.
  int code(double timeout_s = 60) {
    int st = wait(timeout_s);
    if (st == -1) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  double elapsed() const { return elapsed_; }
  // Seconds from t to the exit (as seen by wait(), within 5 ms).
  double exit_time_since(Clock::time_point t) const { return std::chrono::duration<double>(exited_at_ - t).count(); }
  bool timed_out() const { return timed_out_; }

  std::string out() {
    std::lock_guard<std::mutex> g(mu_);
    return out_;
  }
  // stderr without ./launch's oversubscription line ("launch: 4 ranks on this machine's 2 CPUs: times
  // include waiting for a CPU ..."), which a job of more ranks than this machine's CPUs gets and the
  // launcher tests do not count (HonestTime.OversubscribedJobSaysSoInOneLine checks it); err_all():
  // everything.
  std::string err() {
    std::string all = err_all(), kept;
    for (size_t at = 0; at < all.size();) {
      size_t end = all.find('\n', at);
      end = end == std::string::npos ? all.size() : end + 1;
      const std::string line = all.substr(at, end - at);
      if (line.rfind("launch: ", 0) != 0 || line.find("times include waiting for a CPU") == std::string::npos)
        kept += line;
      at = end;
    }
    return kept;
  }
  std::string err_all() {
    std::lock_guard<std::mutex> g(mu_);
    return err_;
  }
  // Waits until stdout (or stderr) holds n occurrences of text (true) or timeout.
  bool wait_out(const std::string& text, int n, double timeout_s, bool on_stderr = false) {
    auto t0 = Clock::now();
    while (secs_since(t0) < timeout_s) {
      std::string o = on_stderr ? err() : out();
      int c = 0;
      for (size_t p = o.find(text); p != std::string::npos; p = o.find(text, p + 1)) ++c;
      if (c >= n) return true;
      if (reader_done_) return false;
      usleep(10 * 1000);
    }
    return false;
  }

 private:
  void read_loop(int o, int e) {
    int fds[2] = {o, e};
    char buf[65536];
    while ((fds[0] >= 0 || fds[1] >= 0) && !stop_reader_) {
      struct pollfd p[2];
      int n = 0;
      int idx[2];
      for (int k = 0; k < 2; ++k)
        if (fds[k] >= 0) {
          p[n] = {fds[k], POLLIN, 0};
          idx[n++] = k;
        }
      if (poll(p, n, 200) < 0 && errno != EINTR) break;
      for (int k = 0; k < n; ++k) {
        if (!p[k].revents) continue;
        ssize_t r = read(p[k].fd, buf, sizeof buf);
        if (r > 0) {
          std::lock_guard<std::mutex> g(mu_);
          (idx[k] == 0 ? out_ : err_).append(buf, static_cast<size_t>(r));
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          close(fds[idx[k]]);
          fds[idx[k]] = -1;
        }
      }
    }
    for (int fd : fds)
      if (fd >= 0) close(fd);
    reader_done_ = true;
  }

  pid_t pid_ = -1;
  int in_fd_ = -1;
  Clock::time_point start_, exited_at_;
  std::thread reader_;
  std::mutex mu_;
  std::string out_, err_;
  std::atomic<bool> reader_done_{false}, stop_reader_{false};
  bool reaped_ = false, timed_out_ = false;
  int status_ = 0;
  double elapsed_ = 0;
};

// Parses "ready <pid>" lines of tool_launch_rank: rank -> pid, from tagged stdout.
inline std::map<int, pid_t> ready_pids(const std::string& out) {
  std::map<int, pid_t> m;
  std::regex re("^\\[(\\d+)\\]<stdout>:ready (\\d+)$");
  for (const std::string& l : split_lines(out)) {
    std::smatch sm;
    if (std::regex_match(l, sm, re)) m[std::stoi(sm[1])] = std::stoi(sm[2]);
  }
  return m;
}

class LaunchLocal : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_ = unique_marker();
    ASSERT_EQ(access(launch_bin().c_str(), X_OK), 0) << "no launcher at " << launch_bin() << " (set BARESGD_LAUNCH)";
    ASSERT_EQ(access(rank_tool().c_str(), X_OK), 0) << "no " << rank_tool() << " (set BARESGD_TOOLS)";
  }
  void TearDown() override { kill_procs_with(marker_); }
  std::string marker_;
};

class LaunchRemote : public TestHostsFixture<> {
 protected:
  void SetUp() override {
    TestHostsFixture::SetUp();
    marker_ = unique_marker();
  }
  void TearDown() override { kill_procs_with(marker_); }
  std::string marker_;
};

}  // namespace launchharness
