// watchdog: a tiny helper process that kills registered process groups if its parent dies (even by
// kill -9): forked by each `launch --agent` before its rank (the rank's group), and by ./launch
// --mpi before mpirun (mpirun's group). Below, "the launcher" is that parent.
//
// PR_SET_PDEATHSIG only reaches a rank's first process; its children (sh -c '...; sleep') would
// survive. The watchdog is in its own session, ignores job-control signals and reads a pipe from
// the launcher on which the launcher registers "+pgid" / "-pgid". On EOF (the launcher is gone,
// however it went) it SIGTERMs every group still registered, SIGKILLs them after a grace period
// and exits. A launcher that finishes normally unregisters its groups first, so the watchdog then
// exits at once.
//
// A rank's child that called setsid leaves its group; while the launcher lives it finds such
// processes as their subreaper (proctree.h). Once the launcher is dead they have re-parented
// elsewhere, so the watchdog also looks for them by an environment entry every rank inherits
// (tag(): "BARESGD_JOB_ID=<id>"), in /proc/<pid>/environ. A process that clears its environment
// and leaves its group escapes that last resort.
#pragma once
#include <sys/types.h>

#include <string>

class Watchdog {
 public:
  Watchdog() = default;
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Forks the watchdog. grace_ms: SIGTERM -> SIGKILL delay when it has to act.
  void start(int grace_ms);
  void watch(pid_t pgid);
  void unwatch(pid_t pgid);
  // When it has to act, it also stops every process whose environment holds entry ("NAME=value").
  void tag(const std::string& entry);
  // Closes the pipe (the watchdog cleans up whatever is still registered) and reaps it.
  void stop();
  pid_t pid() const { return pid_; }
  // The caller reaped the watchdog itself (a waitpid(-1) loop); stop() then does not wait for it.
  void forget() { pid_ = -1; }

 private:
  void send(char op, pid_t pgid);
  pid_t pid_ = -1;
  int fd_ = -1;
};
