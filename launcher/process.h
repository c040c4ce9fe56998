// process: starting programs for ./launch and its agent — finding them on PATH, the one fork+exec
// child set-up (output pipes, an own process group, PR_SET_PDEATHSIG, default signals, optionally
// held before exec), running one to completion with its output captured — and naming how a process
// ended.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

// The path execve should run for cmd: cmd itself when it contains '/', else the first executable
// match in path_var's directories. Empty if none; *why gets a reason.
std::string find_executable(const std::string& cmd, const std::string& path_var, std::string* why);
// Absolute path of the running executable (/proc/self/exe).
std::string self_exe_path();

struct SpawnSpec {
  std::string path;               // the program to execve (resolved, see find_executable); "" = argv[0]
  std::vector<std::string> argv;  // argv[0] as the program should see it
  std::vector<std::string> env;   // the complete environment
  bool stdin_pipe = false;        // a pipe we write to; otherwise /dev/null
  bool capture_output = true;     // stdout/stderr pipes; otherwise inherited
  bool new_process_group = true;  // setpgid(0, 0): the child leads its own group
  int pdeathsig = SIGKILL;        // PR_SET_PDEATHSIG in the child; 0 for none
  bool held = false;              // the child waits, set up, before execve until release_child()
};
struct SpawnedChild {
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1;  // our ends, close-on-exec, non-blocking
  int go_fd = -1, status_fd = -1;            // a held child's: release_child() uses them
};
// fork + execve. Exec failures are reported back through a close-on-exec pipe and thrown as
// std::runtime_error("cannot run '<prog>': <strerror>") after reaping the child. Fork only from
// the main thread (PR_SET_PDEATHSIG is tied to the forking thread).
// A held child (spec.held) is returned before it execs, so the caller can say its pid first; exec
// failures are then reported by release_child instead.
SpawnedChild spawn_process(const SpawnSpec& spec);
// Lets a held child exec. Returns exec's errno in the child (it then _exits 127, not reaped here),
// or 0 when exec succeeded.
int release_child(SpawnedChild* c);

// Runs argv (no stdin), captures stdout and stderr, kills it after timeout. Returns the wait status,
// or -1 if it could not be started or timed out (*err says why).
int run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::string* out,
                std::string* err);

// Human name of a signal: "SIGKILL".
std::string signal_name(int sig);
// "exited with status 3" / "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int status);
// Exit code a shell would report: code, or 128 + signal.
int wait_status_code(int status);
