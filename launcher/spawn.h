// spawn: starting processes for ./launch — local ranks (fork+exec with output pipes, own process
// group, PR_SET_PDEATHSIG), ssh command lines, `ssh -G` host resolution and the parallel
// reachability check — plus small fd helpers shared by the launcher and the agent.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

// ---- fd helpers ----
void set_nonblocking(int fd);
void set_cloexec(int fd);
// Writes all of data to a blocking or non-blocking fd (waits with poll on EAGAIN). False on error
// (errno set), e.g. EPIPE.
bool write_all(int fd, const char* data, size_t n);
inline bool write_all(int fd, const std::string& s) { return write_all(fd, s.data(), s.size()); }
void close_fd(int* fd);  // close if >= 0, set to -1
// sigaction(handler, SA_RESTART, nothing masked) for each of signals.
void install_signal_handler(void (*handler)(int), std::initializer_list<int> signals);

// ---- environment ----
// The current process's environment as "K=V" strings.
std::vector<std::string> current_environment();
// Sets (replaces) NAME in env.
void env_set(std::vector<std::string>* env, const std::string& name, const std::string& value);
// Removes every entry whose name satisfies drop(name).
template <class Pred>
void env_remove_if(std::vector<std::string>* env, Pred drop) {
  std::vector<std::string> out;
  for (auto& e : *env) {
    size_t eq = e.find('=');
    if (!drop(eq == std::string::npos ? e : e.substr(0, eq))) out.push_back(e);
  }
  env->swap(out);
}
// The variables ./launch sets per rank or per job (BARESGD_RANK ... BARESGD_JOB_ID), in the order
// it sets them: stale copies from the caller's environment are dropped; any other BARESGD_*
// (BARESGD_TIMING, ...) passes on.
inline const std::vector<std::string>& launch_rank_env_names() {
  static const std::vector<std::string> kNames = {
      "BARESGD_RANK",       "BARESGD_SIZE",     "BARESGD_LOCAL_RANK", "BARESGD_LOCAL_SIZE",
      "BARESGD_CROSS_RANK", "BARESGD_CROSS_SIZE", "BARESGD_COMM",     "BARESGD_HOSTNAME",
      "BARESGD_HOST_ADDR",  "BARESGD_STORE_ADDR", "BARESGD_SECRET",   "BARESGD_JOB_ID"};
  return kNames;
}
inline bool is_launch_rank_env(const std::string& name) {
  for (const std::string& n : launch_rank_env_names())
    if (name == n) return true;
  return false;
}
// Value of NAME in env, or nullptr.
const std::string* env_find(const std::vector<std::string>& env, const std::string& name, std::string* value);

// ---- command lookup ----
// The path execve should run for cmd: cmd itself when it contains '/', else the first executable
// match in path_var's directories. Empty if none; *why gets a reason.
std::string find_executable(const std::string& cmd, const std::string& path_var, std::string* why);
// Absolute path of the running executable (/proc/self/exe).
std::string self_exe_path();

// ---- local spawn ----
struct SpawnSpec {
  std::string path;               // the program to execve (resolved, see find_executable); "" = argv[0]
  std::vector<std::string> argv;  // argv[0] as the program should see it
  std::vector<std::string> env;   // the complete environment
  bool stdin_pipe = false;        // a pipe we write to; otherwise /dev/null
  bool capture_output = true;     // stdout/stderr pipes; otherwise inherited
  bool new_process_group = true;  // setpgid(0, 0): the child leads its own group
  int pdeathsig = SIGKILL;        // PR_SET_PDEATHSIG in the child; 0 for none
};
struct SpawnedChild {
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1;  // our ends, close-on-exec, non-blocking
};
// fork + execve. Exec failures are reported back through a close-on-exec pipe and thrown as
// std::runtime_error("cannot run '<prog>': <strerror>") after reaping the child. Fork only from
// the main thread (PR_SET_PDEATHSIG is tied to the forking thread).
SpawnedChild spawn_process(const SpawnSpec& spec);

// ---- ssh ----
struct SshOptions {
  std::string port, identity, config;  // -p, -i, -F as given to ./launch
  int connect_timeout = 10;            // seconds, ConnectTimeout
};
// "ssh -o BatchMode=yes -o ConnectTimeout=N [-p P] [-i I] [-F F]" (host and command not included).
std::vector<std::string> ssh_base_argv(const SshOptions& o);
// The -F/-p/-i part alone, for mpirun's plm_rsh_args (unquoted: Open MPI splits it on whitespace,
// so callers reject paths with whitespace).
std::string ssh_user_args(const SshOptions& o);
// POSIX shell single-quoting ('a'\''b').
std::string shell_quote(const std::string& s);
// Joins argv for display, quoting words that need it.
std::string display_command(const std::vector<std::string>& argv);

// Runs argv (no stdin), captures stdout and stderr, kills it after timeout. Returns the wait status,
// or -1 if it could not be started or timed out (*err says why).
int run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                std::string* out, std::string* err);

// `ssh -G [opts] host` -> the value of its "hostname" line. Throws std::runtime_error.
std::string ssh_config_hostname(const SshOptions& o, const std::string& host);

// Checks every host with `ssh ... host true` in parallel, a few attempts each with backoff, all
// within deadline. Returns one entry per host: empty if reachable, else ssh's reason (its last
// stderr line, or "timed out after N s").
// cancelled() is polled; when it returns true the checks stop and every result not yet known reads
// "cancelled".
std::vector<std::string> check_ssh_hosts(const SshOptions& o, const std::vector<std::string>& hosts,
                                         std::chrono::steady_clock::time_point deadline,
                                         const std::function<bool()>& cancelled = nullptr);

// Human name of a signal: "SIGKILL".
std::string signal_name(int sig);
// "exited with status 3" / "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int status);
// Exit code a shell would report: code, or 128 + signal.
int wait_status_code(int status);
