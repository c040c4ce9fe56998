// supervisor: ./launch's event loop — reads every rank's stdout/stderr (one poll loop, whole lines
// out), reaps processes, stops the whole job on the first failure, on SIGINT/SIGTERM/SIGHUP/SIGUSR1
// (forwarded to every rank) and on --timeout, escalating to SIGKILL after the grace, and decides
// the exit status. A rank that exits 128+SIGTERM or 128+SIGUSR1 stopped on that signal (./train's
// ranks save their agreed step first): not a failure; the others are given the grace to do the same.
//
// Children are the ranks' agents (`launch --agent`, agent.h), started here or carried by ssh or
// srun (control bytes on their stdin, status lines on their stderr; see agent_protocol.h), or one
// mpirun whose `[1,R]<stdout>:` lines are re-tagged. The agents stop their ranks' process trees.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/output.h"
#include "launcher/process.h"
#include "launcher/mpi_timeout_report.h"
#include "launcher/tagger.h"
#include "launcher/watchdog.h"

// Exit status for --timeout, as timeout(1).
constexpr int kTimeoutExitCode = 124;

struct SupervisorConfig {
  double timeout_s = 0;  // 0 = no --timeout
  int grace_ms = 3000;   // SIGTERM -> SIGKILL
  std::string nonce;     // of the agents' status lines
  // Heartbeats with the agents (0 = off): a ping byte every interval to each agent; an agent whose
  // ssh brings no marker line for timeout (before its first one: timeout + start_timeout) is named
  // and the job stops (exit 255), its ssh killed, and the job's processes on that host killed over
  // a new ssh (`launch --kill-job`); the launcher exits once that is done (or kill_timeout_s passed).
  double heartbeat_timeout_s = 0, heartbeat_interval_s = 0, start_timeout_s = 30;
  double kill_timeout_s = 20;
  // Asked once a loop turn while every rank still runs (elastic growth, launcher/elastic_grow.h):
  // true stops the job as --timeout does (SIGTERM, SIGKILL after the grace), with exit status 0
  // and not as a failure.
  std::function<bool()> stop_when;
  // --mpi: the world size, for the line naming the ranks when a collective timed out.
  int mpi_ranks = 0;
};

// SIGINT/SIGTERM/SIGHUP/SIGUSR1/SIGCHLD are caught into a self-pipe; SIGPIPE is ignored. Call once,
// early.
void install_launcher_signal_handlers();
// The first SIGINT/SIGTERM/SIGHUP/SIGUSR1 received so far, or 0.
int launcher_stop_signal();

class Supervisor {
 public:
  Supervisor(OutputSink* sink, Watchdog* watchdog, const SupervisorConfig& cfg);
  ~Supervisor();

  // carrier: the agent itself, or the ssh or srun running it. request: the agent spawn request,
  // written to the carrier's stdin by the loop. kill: what kills the job's processes on that host
  // should its agent go silent (ssh host 'launch --kill-job ID'; none for an agent of ours, whose
  // tree the teardown stops). via: the carrier as messages name it ("agent", "ssh", "srun").
  void add_agent(int rank, const std::string& host, const SpawnedChild& carrier, const std::string& request,
                 const SpawnSpec& kill = {}, const std::string& via = "ssh");
  // mpirun, which starts every rank itself (its tagged output names them).
  void add_mpirun(const SpawnedChild& c);

  // Stops what was started so far (message first) and returns exit_code once all is gone. For a
  // start that fails half way.
  int abort_start(const std::string& message, int exit_code);
  // Runs until every child is gone; returns the launcher's exit status.
  int run();
  // After run(): true when the job stopped because a rank failed or a host was lost (not a clean
  // exit, --timeout, a signal to the launcher, or a start error): what --max-restarts restarts.
  bool job_failed() const { return job_failed_; }
  // That failure, e.g. "rank 2 (localhost, pid 1234) was killed by signal 9 (SIGKILL)".
  const std::string& failure_cause() const { return failure_cause_; }
  // The host of that failure ("" for mpirun's), and whether the host itself was lost (silent
  // agent, ssh gone without the agent's status) rather than a rank on it failing.
  const std::string& failure_host() const { return failure_host_; }
  bool failure_host_lost() const { return failure_host_lost_; }
  // After run(): true when stop_when stopped the job.
  bool stopped_when_asked() const { return stopped_when_asked_; }

 private:
  struct Child;
  struct HostKill;                                                 // a running `launch --kill-job` over ssh
  Child* adopt(std::unique_ptr<Child> c, const SpawnedChild& sc);  // its process, pipes and watchdog
  void read_child(Child* c, int which, bool to_eof);
  void handle_lines(Child* c, int which, std::vector<Line>* lines);
  bool take_agent_marker(Child* c, const Line& l);
  void emit_mpi_piece(const MpiPiece& pc);
  void on_rank_status(Child* c, int wait_status, bool from_agent);
  void judge_agent_reports();
  std::string describe_child(const Child* c) const;  // "rank 2 (hpc03, pid 1234)"
  void finish_child(Child* c);
  void begin_stop(int sig, int exit_code);
  void begin_saved_stop(Child* c, int wait_status);
  void signal_child(Child* c, int sig);
  void kill_all();
  void reap();
  // One turn of the loop: deadlines and signals, poll and I/O, reaping, finishing. False when
  // every child is done (or poll failed).
  bool step(int poll_ms);
  void check_timeout(std::chrono::steady_clock::time_point now);
  void check_stop_when();
  void check_heartbeats(std::chrono::steady_clock::time_point now);
  void lose_host(Child* c, double silent_s);
  void kill_on_host(Child* c);
  bool settle_host_kills(bool give_up);
  void handle_stop_signals();
  void escalate_stop(std::chrono::steady_clock::time_point now);
  bool poll_children(int poll_ms);
  void write_control(Child* c, short revents);
  void flush_stale_cr(Child* c, std::chrono::steady_clock::time_point now);
  void close_held_pipes(Child* c, std::chrono::steady_clock::time_point now, bool give_up);
  bool settle_children(bool give_up);

  OutputSink* sink_;
  Watchdog* watchdog_;
  MpiTimeoutReports mpi_timeouts_;  // --mpi: the ranks' collective-timeout lines seen
  SupervisorConfig cfg_;
  std::vector<std::unique_ptr<Child>> children_;
  std::vector<std::unique_ptr<HostKill>> host_kills_;
  std::vector<Child*> agent_reports_;  // status lines read in this turn, not yet judged
  bool stopping_ = false, killed_ = false, hard_killed_ = false;
  int stop_code_ = 0;      // from a signal or --timeout
  int failure_code_ = -1;  // from the first failing rank
  bool job_failed_ = false;
  std::string failure_cause_;
  std::string failure_host_;
  bool failure_host_lost_ = false;
  bool stopped_when_asked_ = false;
  bool first_failure_exited_ =
      false;  // it exited with a status or died of SIGPIPE (a signal death soon after may replace it)
  std::chrono::steady_clock::time_point first_failure_at_;
  int seen_stop_count_ = 0;  // signals handled so far
  size_t stop_exits_ = 0;    // ranks that exited 128 + the stop's signal (SIGTERM, SIGUSR1)
  std::chrono::steady_clock::time_point start_, kill_at_, hard_kill_at_, give_up_at_;
};
