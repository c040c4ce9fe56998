// ssh_check: the parallel `ssh host true` reachability check (see ssh_check.h).
#include "launcher/ssh_check.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <thread>

#include "launcher/env.h"
#include "launcher/fdio.h"
#include "launcher/process.h"

using Clock = std::chrono::steady_clock;

namespace {

constexpr int kAttempts = 3;

// One host's check: its current ssh (pid >= 0 while it runs) and its result so far.
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

bool retryable(const std::string& why) {
  static const char* kFinal[] = {"Permission denied",
                                 "Host key verification failed",
                                 "Could not resolve",
                                 "REMOTE HOST IDENTIFICATION HAS CHANGED",
                                 "No such file",
                                 "Bad configuration",
                                 "Too many authentication failures"};
  for (const char* f : kFinal)
    if (why.find(f) != std::string::npos) return false;
  return true;
}

// `ssh ... host true`, its ConnectTimeout cut to the time left.
void start_attempt(Check* c, const SshOptions& o, const std::string& ssh_path, Clock::time_point deadline,
                   Clock::time_point now) {
  double left = std::chrono::duration<double>(deadline - now).count();
  SshOptions so = o;
  so.connect_timeout = std::max(1, std::min(o.connect_timeout, static_cast<int>(left)));
  SpawnSpec spec;
  spec.argv = ssh_base_argv(so);
  spec.argv[0] = ssh_path;
  spec.argv.push_back(c->host);
  spec.argv.push_back("true");
  spec.env = current_environment();
  try {
    SpawnedChild sc = spawn_process(spec);
    c->pid = sc.pid;
    c->out_fd = sc.out_fd;
    c->err_fd = sc.err_fd;
    c->err_text.clear();
    c->attempt++;
  } catch (const std::exception& e) {
    c->done = true;
    c->result = e.what();
  }
}

// Starts every attempt that is due. True when every check is done.
bool start_due_attempts(std::vector<Check>* checks, const SshOptions& o, const std::string& ssh_path,
                        Clock::time_point deadline, Clock::time_point now) {
  bool all_done = true;
  for (Check& c : *checks) {
    if (c.done) continue;
    all_done = false;
    if (c.pid < 0 && now >= c.next_start) start_attempt(&c, o, ssh_path, deadline, now);
  }
  return all_done;
}

// Deadline or cancellation: kills what runs; every open check gets its reason.
void stop_open_checks(std::vector<Check>* checks, bool cancel, Clock::time_point now, Clock::time_point start_time) {
  for (Check& c : *checks) {
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
    c.result =
        cancel ? "cancelled"
               : "no answer within " + std::string(buf) + " s (--start-timeout)" + (last.empty() ? "" : ": " + last);
  }
}

// Up to 20 ms for output from any running ssh.
void wait_for_output(const std::vector<Check>& checks) {
  std::vector<struct pollfd> p;
  for (const Check& c : checks) {
    if (c.out_fd >= 0) p.push_back({c.out_fd, POLLIN, 0});
    if (c.err_fd >= 0) p.push_back({c.err_fd, POLLIN, 0});
  }
  if (!p.empty())
    poll(p.data(), p.size(), 20);
  else
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// An ssh that exited: reachable, a final reason, or another attempt after a backoff.
void judge_attempt(Check* c, int st, Clock::time_point deadline) {
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    c->done = true;
    c->result.clear();
    return;
  }
  std::string why = last_line(c->err_text);
  if (why.empty()) why = "ssh " + describe_wait_status(st);
  c->result = why;
  if (c->attempt >= kAttempts || !retryable(why)) {
    c->done = true;
    return;
  }
  c->next_start = Clock::now() + std::chrono::milliseconds(250 << c->attempt);  // 0.5 s, 1 s
  if (c->next_start >= deadline) c->done = true;
}

// Reads every running ssh's output and judges those that exited.
void collect_attempts(std::vector<Check>* checks, Clock::time_point deadline) {
  for (Check& c : *checks) {
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
    judge_attempt(&c, st, deadline);
  }
}

}  // namespace

std::vector<std::string> check_ssh_hosts(const SshOptions& o, const std::vector<std::string>& hosts,
                                         Clock::time_point deadline, const std::function<bool()>& cancelled) {
  std::string ssh_path = find_executable("ssh", getenv("PATH") ? getenv("PATH") : "", nullptr);
  if (ssh_path.empty()) return std::vector<std::string>(hosts.size(), "ssh not found in PATH");
  auto start_time = Clock::now();
  std::vector<Check> checks(hosts.size());
  for (size_t k = 0; k < hosts.size(); ++k) {
    checks[k].host = hosts[k];
    checks[k].next_start = start_time;
  }
  while (true) {
    auto now = Clock::now();
    if (start_due_attempts(&checks, o, ssh_path, deadline, now)) break;
    bool cancel = cancelled && cancelled();
    if (now >= deadline || cancel) {
      stop_open_checks(&checks, cancel, now, start_time);
      break;
    }
    wait_for_output(checks);
    collect_attempts(&checks, deadline);
  }
  std::vector<std::string> out;
  for (Check& c : checks) out.push_back(c.result);
  return out;
}
