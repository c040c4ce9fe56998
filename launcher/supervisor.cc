// supervisor: the launcher's poll loop over rank output, process exits, signals and deadlines.
#include "launcher/supervisor.h"
#include "launcher/options.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "launcher/agent_protocol.h"
#include "launcher/fdio.h"
#include "launcher/ssh.h"

using Clock = std::chrono::steady_clock;

namespace {

int g_sig_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_stop_count = 0;

void on_signal(int sig) {
  int saved = errno;
  if (sig != SIGCHLD) {
    if (g_stop_signal == 0) g_stop_signal = sig;
    g_stop_count = g_stop_count + 1;
  }
  unsigned char b = static_cast<unsigned char>(sig);
  if (g_sig_pipe[1] >= 0) {
    ssize_t ignored = write(g_sig_pipe[1], &b, 1);
    (void)ignored;
  }
  errno = saved;
}

void drain_signal_pipe() {
  unsigned char buf[256];
  while (g_sig_pipe[0] >= 0 && read(g_sig_pipe[0], buf, sizeof buf) > 0) {}
}

// Death by SIGPIPE: a rank that wrote to the socket of a peer that died first (Gloo) — the peer's
// death is the cause, as for a peer's "lost the connection" exit.
bool is_echo_death(int wait_status) { return WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGPIPE; }

// Statuses seen together are judged deaths by a signal first, SIGPIPE deaths (written to a dead
// peer's socket: an echo too) next, exits last.
int judging_order(int wait_status) { return !WIFSIGNALED(wait_status) ? 2 : is_echo_death(wait_status) ? 1 : 0; }

// An exit with 128+SIGTERM or 128+SIGUSR1: a rank that stopped on that signal by itself, as
// ./train's ranks do after saving the step they agreed on (docs/deploy.md); not a failure.
bool is_stop_exit(int wait_status) {
  return WIFEXITED(wait_status) &&
         (WEXITSTATUS(wait_status) == 128 + SIGTERM || WEXITSTATUS(wait_status) == 128 + SIGUSR1);
}

// A wait status for an agent's report.
int synth_status(const std::string& kind, long value) {
  if (kind == "signal") return static_cast<int>(value & 0x7f);
  return static_cast<int>((value & 0xff) << 8);
}

}  // namespace

void install_launcher_signal_handlers() {
  if (g_sig_pipe[0] < 0) {
    if (pipe2(g_sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_sig_pipe[0] = g_sig_pipe[1] = -1;
  }
  install_signal_handler(on_signal, {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGCHLD});
  signal(SIGPIPE, SIG_IGN);
}

int launcher_stop_signal() { return g_stop_signal; }

enum class Kind { kAgent, kMpirun };

struct Supervisor::Child {
  Kind kind = Kind::kAgent;
  int rank = -1;
  std::string host;
  pid_t pid = -1;        // the local process: agent, ssh, srun or mpirun (each leads its own group)
  int fd[2] = {-1, -1};  // stdout, stderr
  int ctl_fd = -1;       // the agent's stdin (through ssh or srun, or its own)
  std::string ctl_buf;
  bool ctl_close = false;  // close ctl_fd once ctl_buf is written
  LineSplitter split[2];
  Clock::time_point last_data[2];
  bool reaped = false;
  int ssh_status = 0;  // the local process's wait status
  Clock::time_point reaped_at;
  bool leftovers_killed = false;
  long remote_pid = -1;
  long agent_pid = -1;           // from its "alive" lines
  Clock::time_point last_heard;  // the last marker line of the agent (or the spawn)
  Clock::time_point next_ping;
  bool heard = false;         // a marker line came
  bool lost = false;          // named silent; its ssh was killed
  std::string carry;          // a partial rank stderr line cut by an "alive" marker
  SpawnSpec kill_spec;        // ssh host 'launch --kill-job ID' (or srun's), for when it is lost
  std::string via = "ssh";    // what carries the agent: "ssh", or "srun" for a job step
  bool status_known = false;  // rank status known (the agent said; mpirun: reaped)
  int status = 0;
  bool reported = false;  // failure judged
  bool finished = false;
  Child(Kind k, int r, std::string h, bool split_cr)
      : kind(k), rank(r), host(std::move(h)), split{LineSplitter(split_cr), LineSplitter(split_cr)} {}
};

// `launch --kill-job` over ssh (or srun) to a lost host: its stderr is kept for the message should
// it fail.
struct Supervisor::HostKill {
  std::string host, via;
  int rank = -1;
  pid_t pid = -1;
  int fd[2] = {-1, -1};  // stdout (discarded), stderr
  std::string err;       // the last 4 KiB of its stderr
  bool reaped = false, killed = false, done = false;
  int status = 0;
  Clock::time_point deadline;
};

Supervisor::Supervisor(OutputSink* sink, Watchdog* watchdog, const SupervisorConfig& cfg)
    : sink_(sink), watchdog_(watchdog), cfg_(cfg), start_(Clock::now()) {}

Supervisor::~Supervisor() {
  for (auto& c : children_) {
    close_fd(&c->fd[0]);
    close_fd(&c->fd[1]);
    close_fd(&c->ctl_fd);
  }
  for (auto& k : host_kills_) {
    close_fd(&k->fd[0]);
    close_fd(&k->fd[1]);
  }
}

Supervisor::Child* Supervisor::adopt(std::unique_ptr<Child> c, const SpawnedChild& sc) {
  c->pid = sc.pid;
  c->fd[0] = sc.out_fd;
  c->fd[1] = sc.err_fd;
  c->ctl_fd = sc.in_fd;
  if (watchdog_) watchdog_->watch(sc.pid);
  children_.push_back(std::move(c));
  return children_.back().get();
}

void Supervisor::add_agent(int rank, const std::string& host, const SpawnedChild& carrier, const std::string& request,
                           const SpawnSpec& kill, const std::string& via) {
  Child* c = adopt(std::make_unique<Child>(Kind::kAgent, rank, host, true), carrier);
  c->ctl_buf = request;
  c->kill_spec = kill;
  c->via = via;
  c->last_heard = c->next_ping = Clock::now();
}

void Supervisor::add_mpirun(const SpawnedChild& sc) {
  // mpirun tags by '\n'; a '\r' inside a line is the rank's
  adopt(std::make_unique<Child>(Kind::kMpirun, -1, "mpirun", false), sc);
}

// A remote rank's stderr line: the agent's pid or status marker (with any partial rank line
// before it) is taken out; true when the line was one.
bool Supervisor::take_agent_marker(Child* c, const Line& l) {
  std::string before, kind;
  long value = 0;
  if (l.continuation || !parse_agent_marker(l.text, cfg_.nonce, &before, &kind, &value)) return false;
  c->last_heard = Clock::now();
  c->heard = true;
  if (kind == "alive") {
    // Written between two pieces of a rank's line: the piece before joins the next line.
    c->agent_pid = value;
    c->carry = before;
    return true;
  }
  if (!before.empty()) {
    Line head;
    head.text = before;
    sink_->emit(c->rank, Stream::kStderr, head);
  }
  if (kind == "pid") {
    c->remote_pid = value;
  } else if (!c->status_known) {
    c->status_known = true;
    c->status = synth_status(kind, value);
    agent_reports_.push_back(c);  // judged after this turn's reads (judge_agent_reports)
  }
  return true;
}

// One piece of an mpirun line, a rank's: '\r' inside the rank's text ends lines too.
void Supervisor::emit_mpi_piece(const MpiPiece& pc) {
  const std::string& t = pc.line.text;
  size_t pos = 0;
  while (true) {
    size_t cr = t.find('\r', pos);
    Line part;
    if (cr == std::string::npos) {
      part.text = t.substr(pos);
      part.end = pc.line.end;
    } else {
      part.text = t.substr(pos, cr - pos);
      part.end = "\r";
      if (cr + 1 == t.size()) {  // the piece ends in '\r': merge with its terminator
        part.end = pc.line.end == "\n" ? "\r\n" : "\r";
        cr = std::string::npos;
      }
    }
    if (!part.text.empty() || !part.end.empty()) sink_->emit(pc.rank, pc.stream, part);
    if (cr == std::string::npos) break;
    pos = cr + 1;
  }
}

void Supervisor::handle_lines(Child* c, int which, std::vector<Line>* lines) {
  Stream stream = which == 0 ? Stream::kStdout : Stream::kStderr;
  for (Line& l : *lines) {
    if (c->kind == Kind::kAgent) {
      if (which == 1 && !c->carry.empty() && !l.continuation) {
        l.text = c->carry + l.text;
        c->carry.clear();
      }
      if (which == 1 && take_agent_marker(c, l)) continue;
      sink_->emit(c->rank, stream, l);
    } else {  // mpirun: "[1,R]<stdout>:text" -> re-tag; anything else is mpirun's own
      std::vector<MpiPiece> pieces;
      if (!l.continuation) pieces = split_mpi_line(l);
      for (const MpiPiece& pc : pieces) {
        if (pc.stream == Stream::kStderr) mpi_timeouts_.add(pc.rank, pc.line.text);
        emit_mpi_piece(pc);
      }
      if (pieces.empty()) sink_->raw(stream, l.text + (l.end.empty() ? "\n" : l.end));
    }
  }
  lines->clear();
}

void Supervisor::read_child(Child* c, int which, bool to_eof) {
  int& fd = c->fd[which];
  if (fd < 0) return;
  static char buf[65536];
  std::vector<Line> lines;
  const int max_rounds = to_eof ? 1024 : 16;  // to_eof: the writer is dead; take what is buffered
  for (int rounds = 0; rounds < max_rounds; ++rounds) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      c->split[which].feed(buf, static_cast<size_t>(n), &lines);
      c->last_data[which] = Clock::now();
      handle_lines(c, which, &lines);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // a writer is still alive
    // EOF or error.
    c->split[which].finish(&lines);
    handle_lines(c, which, &lines);
    if (which == 1 && !c->carry.empty()) {
      Line rest;
      rest.text.swap(c->carry);
      sink_->emit(c->rank, Stream::kStderr, rest);
    }
    close_fd(&fd);
    return;
  }
}

std::string Supervisor::describe_child(const Child* c) const {
  if (c->kind == Kind::kAgent && c->remote_pid < 0)
    return "rank " + std::to_string(c->rank) + " (" + c->host + ", " + c->via + " pid " + std::to_string(c->pid) + ")";
  long pid = c->kind == Kind::kAgent ? c->remote_pid : c->pid;
  return "rank " + std::to_string(c->rank) + " (" + c->host + ", pid " + std::to_string(pid) + ")";
}

void Supervisor::on_rank_status(Child* c, int wait_status, bool from_agent) {
  if (c->reported) return;
  c->reported = true;
  bool ok = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (ok) return;
  if (c->kind == Kind::kAgent && is_stop_exit(wait_status)) {
    if (!stopping_) begin_saved_stop(c, wait_status);
    if (wait_status_code(wait_status) == stop_code_) ++stop_exits_;
    return;
  }
  if (stopping_) {
    // A rank killed by a signal (not by our stop's SIGTERM or SIGKILL) just after a first failure
    // that was an exit status is the likelier cause: its peers fail at once when it dies ("lost the
    // connection to rank 0") and can be seen first. It becomes the first failure; its status, the job's.
    if (first_failure_exited_ && !killed_ && c->kind != Kind::kMpirun && WIFSIGNALED(wait_status) &&
        WTERMSIG(wait_status) != SIGTERM && !is_echo_death(wait_status) &&
        Clock::now() - first_failure_at_ < std::chrono::milliseconds(500)) {
      first_failure_exited_ = false;
      failure_code_ = wait_status_code(wait_status);
      if (job_failed_) {
        failure_cause_ = describe_child(c) + " " + describe_wait_status(wait_status);
        failure_host_ = c->host;
        failure_host_lost_ = false;
      }
      sink_->message("launch: " + describe_child(c) + " " + describe_wait_status(wait_status) +
                     " at the same time; that is the first failure");
    }
    return;
  }
  // The first failure decides.
  failure_code_ = wait_status_code(wait_status);
  first_failure_exited_ = WIFEXITED(wait_status) || is_echo_death(wait_status);
  first_failure_at_ = Clock::now();
  job_failed_ = true;
  failure_cause_ = "mpirun " + describe_wait_status(wait_status);
  if (c->kind == Kind::kMpirun) {
    // mpirun says which rank failed when a rank fails; when mpirun itself is killed nobody would:
    // its ranks are gone with it (Open MPI's orted kill them), and the line says so.
    if (WIFSIGNALED(wait_status))
      sink_->message("launch: mpirun " + describe_wait_status(wait_status) + " (not by this launcher); its ranks " +
                     "ended with it");
    else if (mpi_timeouts_.any())  // a rank's watchdog called MPI_Abort: name who waited and who did not
      sink_->message(mpi_timeout_summary(mpi_timeouts_, cfg_.mpi_ranks, describe_wait_status(wait_status)));
    return;
  }
  std::string what = describe_wait_status(wait_status);
  if (c->kind == Kind::kAgent && !from_agent) {
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 255)
      what = "lost its agent or its " + c->via + " connection (" + c->via + " exited with status 255)";
    else
      what = "ended before its agent reported (" + c->via + " " + describe_wait_status(wait_status) + ")";
  }
  int code = failure_code_;
  failure_cause_ = describe_child(c) + " " + what;
  failure_host_ = c->host;
  // ssh ended without the agent's status: the host (or the link to it) went away, not the rank.
  failure_host_lost_ = c->kind == Kind::kAgent && !from_agent;
  sink_->message("launch: " + describe_child(c) + " " + what + "; stopping the job");
  begin_stop(SIGTERM, code);
  failure_code_ = code;
}

void Supervisor::signal_child(Child* c, int sig) {
  if (c->finished) return;
  switch (c->kind) {
    case Kind::kAgent:
      if (c->ctl_fd >= 0) {
        char b = agent_control_byte(sig);
        if (b) c->ctl_buf += b;
      } else if (!c->reaped && sig == SIGKILL) {
        kill(-c->pid, SIGKILL);
      }
      break;
    case Kind::kMpirun:
      if (!c->reaped)
        kill(c->pid, sig);
      else
        kill(-c->pid, sig);
      break;
  }
}

void Supervisor::begin_stop(int sig, int exit_code) {
  if (stopping_) return;
  stopping_ = true;
  stop_code_ = exit_code;
  auto now = Clock::now();
  kill_at_ = now + std::chrono::milliseconds(cfg_.grace_ms);
  hard_kill_at_ = kill_at_ + std::chrono::seconds(5);
  give_up_at_ = hard_kill_at_ + std::chrono::seconds(3);
  for (auto& c : children_) signal_child(c.get(), sig);
}

// A rank exited 128+SIGTERM/SIGUSR1 before any stop of ours (the signal went to the rank, not to
// us): the others are stopping at the same step, so they are not signalled, only SIGKILLed should
// they still run after the grace. The job's status is that exit, and it is no failure.
void Supervisor::begin_saved_stop(Child* c, int wait_status) {
  const int code = wait_status_code(wait_status);
  sink_->message("launch: " + describe_child(c) + " exited " + std::to_string(code) + " (stopped on " +
                 signal_name(code - 128) + "); waiting for the other ranks to stop too");
  stopping_ = true;
  stop_code_ = code;
  kill_at_ = Clock::now() + std::chrono::milliseconds(cfg_.grace_ms);
  hard_kill_at_ = kill_at_ + std::chrono::seconds(5);
  give_up_at_ = hard_kill_at_ + std::chrono::seconds(3);
}

void Supervisor::kill_all() {
  killed_ = true;
  for (auto& c : children_) {
    if (c->finished) continue;
    signal_child(c.get(), SIGKILL);
    if (c->kind == Kind::kAgent) c->ctl_close = true;  // EOF: the agent kills and exits too
    if (c->kind == Kind::kMpirun) kill(-c->pid, SIGKILL);
  }
}

void Supervisor::reap() {
  // Take every child that is gone, then judge them, those killed by a signal first: when a rank is
  // killed its peers fail soon after ("lost the connection to rank 0") and may be reaped in the same
  // pass; the killed rank is the cause, and its status is the job's.
  std::vector<std::pair<pid_t, int>> gone;
  for (;;) {
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG);
    if (w <= 0) break;
    if (watchdog_ && w == watchdog_->pid()) watchdog_->forget();
    gone.push_back({w, st});
  }
  std::stable_sort(gone.begin(), gone.end(), [&](const std::pair<pid_t, int>& a, const std::pair<pid_t, int>& b) {
    return judging_order(a.second) < judging_order(b.second);
  });
  for (const auto& [w, st] : gone) {
    for (auto& k : host_kills_) {
      if (k->pid != w || k->reaped) continue;
      k->reaped = true;
      k->status = st;
    }
    for (auto& c : children_) {
      if (c->pid != w || c->reaped) continue;
      c->reaped = true;
      c->ssh_status = st;
      c->reaped_at = Clock::now();
      // Take what it wrote before dying, then judge.
      read_child(c.get(), 0, true);
      read_child(c.get(), 1, true);
      if (c->kind == Kind::kMpirun) {
        c->status_known = true;
        c->status = st;
        on_rank_status(c.get(), st, false);
      }
      break;
    }
  }
}

// The ranks' statuses the agents reported in this turn, in judging order: when a rank is killed its
// peers fail soon after ("lost the connection to rank 0"), and their reports may come in the same
// read; the killed rank is the cause, and its status is the job's.
void Supervisor::judge_agent_reports() {
  std::stable_sort(agent_reports_.begin(), agent_reports_.end(),
                   [](const Child* a, const Child* b) { return judging_order(a->status) < judging_order(b->status); });
  for (Child* c : agent_reports_) on_rank_status(c, c->status, true);
  agent_reports_.clear();
}

void Supervisor::finish_child(Child* c) {
  c->finished = true;
  close_fd(&c->ctl_fd);
  // Leftovers of a finished rank (background processes) go too; then the watchdog can forget it.
  kill(-c->pid, SIGKILL);
  if (watchdog_) watchdog_->unwatch(c->pid);
  if (c->kind == Kind::kAgent && !c->status_known) {
    c->status_known = true;
    c->status = c->ssh_status;
    on_rank_status(c, c->ssh_status, false);
  }
}

void Supervisor::check_timeout(Clock::time_point now) {
  if (cfg_.timeout_s > 0 && !stopping_ && now - start_ >= std::chrono::duration<double>(cfg_.timeout_s)) {
    sink_->message("launch: the job ran longer than --timeout " + seconds_text(cfg_.timeout_s) + " s; stopping it");
    begin_stop(SIGTERM, kTimeoutExitCode);
  }
}

// stop_when, while every rank runs (one that ended already means the job is ending by itself).
void Supervisor::check_stop_when() {
  if (!cfg_.stop_when || stopping_ || children_.empty()) return;
  for (auto& c : children_)
    if (c->reaped || c->status_known) return;
  if (!cfg_.stop_when()) return;
  stopped_when_asked_ = true;
  begin_stop(SIGTERM, 0);
}

// The host of an agent silent for the heartbeat timeout: named, its ssh killed (there is no one to
// talk to), and the job stopped as on a failure.
void Supervisor::lose_host(Child* c, double silent_s) {
  c->lost = true;
  std::string agent = c->agent_pid > 0 ? ", agent pid " + std::to_string(c->agent_pid)
                                       : ", " + c->via + " pid " + std::to_string(c->pid);
  sink_->message("launch: " + c->host + " (rank " + std::to_string(c->rank) + agent + ") sent no heartbeat for " +
                 seconds_text(silent_s) + " s; stopping the job");
  kill(-c->pid, SIGKILL);
  close_fd(&c->ctl_fd);
  c->ctl_buf.clear();
  c->status_known = c->reported = true;
  c->status = 255 << 8;
  if (!stopping_) {
    failure_code_ = 255;
    // The silence is the cause, whatever dies next (the kill below may SIGKILL a rank we see).
    first_failure_exited_ = false;
    first_failure_at_ = Clock::now();
    job_failed_ = true;
    failure_host_ = c->host;
    failure_host_lost_ = true;
    failure_cause_ = c->host + " (rank " + std::to_string(c->rank) + agent + ") sent no heartbeat for " +
                     seconds_text(silent_s) + " s";
    begin_stop(SIGTERM, 255);
  }
  kill_on_host(c);
}

// The lost agent cannot act (stopped, hung) and its rank would live on, maybe until a SIGCONT:
// every process of the job on that host is SIGKILLed over a new ssh. run() waits for it.
void Supervisor::kill_on_host(Child* c) {
  if (c->kill_spec.argv.empty()) return;
  auto k = std::make_unique<HostKill>();
  k->host = c->host;
  k->via = c->via;
  k->rank = c->rank;
  k->deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.kill_timeout_s));
  try {
    SpawnedChild sc = spawn_process(c->kill_spec);
    k->pid = sc.pid;
    k->fd[0] = sc.out_fd;
    k->fd[1] = sc.err_fd;
    close_fd(&sc.in_fd);
  } catch (const std::exception& e) {
    sink_->message("launch: cannot kill the job's processes on " + c->host + ": " + e.what());
    return;
  }
  host_kills_.push_back(std::move(k));
}

// Reads what the kills wrote, judges those that ended; after kill_timeout_s, SIGKILL. True while
// one is still running.
bool Supervisor::settle_host_kills(bool give_up) {
  auto now = Clock::now();
  bool running = false;
  for (auto& kp : host_kills_) {
    HostKill* k = kp.get();
    if (k->done) continue;
    for (int w = 0; w < 2; ++w) {
      char buf[4096];
      ssize_t n = -1;
      while (k->fd[w] >= 0 && (n = read(k->fd[w], buf, sizeof buf)) != 0) {
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK) close_fd(&k->fd[w]);
          break;
        }
        if (w == 1) k->err.append(buf, static_cast<size_t>(n));
        if (k->err.size() > 4096) k->err.erase(0, k->err.size() - 4096);
      }
      if (k->fd[w] >= 0 && n == 0) close_fd(&k->fd[w]);
    }
    const std::string what = "launch: could not kill the job's processes on " + k->host + " (rank " +
                             std::to_string(k->rank) + ") over " + k->via + ": ";
    if (k->reaped) {
      close_fd(&k->fd[0]);
      close_fd(&k->fd[1]);
      k->done = true;
      if (!k->killed && (!WIFEXITED(k->status) || WEXITSTATUS(k->status) != 0))  // killed: already said
        sink_->message(
            what + (last_line(k->err).empty() ? k->via + " " + describe_wait_status(k->status) : last_line(k->err)));
      continue;
    }
    if (now >= k->deadline && !k->killed) {
      k->killed = true;
      kill(-k->pid, SIGKILL);
      sink_->message(what + "no answer within " + seconds_text(cfg_.kill_timeout_s) + " s");
    }
    if (give_up || (k->killed && now >= k->deadline + std::chrono::seconds(3))) {
      close_fd(&k->fd[0]);
      close_fd(&k->fd[1]);
      k->done = true;
      continue;
    }
    running = true;
  }
  return running;
}

// Pings out; a remote child whose agent has said nothing for the timeout is lost. Before the first
// marker, ssh may still be connecting: start_timeout more.
void Supervisor::check_heartbeats(Clock::time_point now) {
  if (cfg_.heartbeat_timeout_s <= 0) return;
  auto timeout = std::chrono::duration<double>(cfg_.heartbeat_timeout_s);
  auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.heartbeat_interval_s));
  for (auto& cp : children_) {
    Child* c = cp.get();
    if (c->kind != Kind::kAgent || c->finished || c->lost || c->reaped) continue;
    if (c->ctl_fd >= 0 && c->ctl_buf.empty() && !c->ctl_close && now >= c->next_ping) {
      c->ctl_buf += kAgentPing;
      c->next_ping = now + interval;
    }
    auto allowed = c->heard ? timeout : timeout + std::chrono::duration<double>(cfg_.start_timeout_s);
    if (now - c->last_heard < allowed) continue;
    // This launcher may itself have been descheduled or stopped: the markers may be sitting in the
    // pipe unread. Drain it first, so only an agent that really said nothing is lost.
    read_child(c, 1, false);
    if (c->finished || c->reaped || Clock::now() - c->last_heard < allowed) continue;
    lose_host(c, cfg_.heartbeat_timeout_s);  // also after its status: an agent then exits at once
  }
}

// The first SIGINT/SIGTERM/SIGHUP/SIGUSR1 goes to every rank and stops the job (./train's ranks save
// their step first: the SIGKILL waits --stop-grace); another one while stopping kills it.
void Supervisor::handle_stop_signals() {
  if (g_stop_count == seen_stop_count_) return;
  seen_stop_count_ = g_stop_count;
  int sig = g_stop_signal;
  if (!stopping_) {
    sink_->message("launch: received " + signal_name(sig) + "; forwarding it to every rank and stopping the job");
    begin_stop(sig, 128 + sig);
  } else if (!killed_) {
    sink_->message("launch: received a signal while stopping; killing the job");
    kill_all();
    hard_kill_at_ = Clock::now() + std::chrono::seconds(5);
    give_up_at_ = hard_kill_at_ + std::chrono::seconds(3);
  }
}

// SIGKILL after the grace period; SIGKILL to every group and process left 5 s later.
void Supervisor::escalate_stop(Clock::time_point now) {
  if (stopping_ && !killed_ && now >= kill_at_) {
    kill_all();
    hard_kill_at_ = now + std::chrono::seconds(5);
    give_up_at_ = hard_kill_at_ + std::chrono::seconds(3);
  }
  if (killed_ && !hard_killed_ && now >= hard_kill_at_) {
    hard_killed_ = true;
    for (auto& c : children_)
      if (!c->finished && !c->reaped) kill(-c->pid, SIGKILL), kill(c->pid, SIGKILL);
  }
}

// Writes what is queued for an agent's ssh stdin; closes it on error, or when asked once empty.
void Supervisor::write_control(Child* c, short revents) {
  if (revents & (POLLERR | POLLHUP)) {
    close_fd(&c->ctl_fd);
    c->ctl_buf.clear();
    return;
  }
  while (!c->ctl_buf.empty()) {
    ssize_t n = write(c->ctl_fd, c->ctl_buf.data(), c->ctl_buf.size());
    if (n > 0) {
      c->ctl_buf.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_fd(&c->ctl_fd);  // EPIPE: the ssh is gone
    c->ctl_buf.clear();
    break;
  }
  if (c->ctl_fd >= 0 && c->ctl_buf.empty() && c->ctl_close) close_fd(&c->ctl_fd);
}

// One poll over the signal pipe, every output pipe and the control pipes with bytes to write;
// then reads and writes what is ready. False when poll fails.
bool Supervisor::poll_children(int poll_ms) {
  std::vector<struct pollfd> pfds;
  std::vector<std::pair<Child*, int>> who;  // which = 0/1 output, 2 ctl
  pfds.push_back({g_sig_pipe[0], POLLIN, 0});
  who.push_back({nullptr, -1});
  for (auto& c : children_) {
    for (int w = 0; w < 2; ++w) {
      if (c->fd[w] >= 0) {
        pfds.push_back({c->fd[w], POLLIN, 0});
        who.push_back({c.get(), w});
      }
    }
    if (c->ctl_fd >= 0 && (!c->ctl_buf.empty() || c->ctl_close)) {
      pfds.push_back({c->ctl_fd, POLLOUT, 0});
      who.push_back({c.get(), 2});
    }
  }
  int r = poll(pfds.data(), pfds.size(), poll_ms);
  if (r < 0 && errno != EINTR) return false;
  drain_signal_pipe();
  for (size_t k = 1; k < pfds.size(); ++k) {
    if (!pfds[k].revents) continue;
    Child* c = who[k].first;
    int w = who[k].second;
    if (w < 2)
      read_child(c, w, false);
    else if (c->ctl_fd >= 0)
      write_control(c, pfds[k].revents);
  }
  return true;
}

// A '\r'-ended line waiting >100 ms for a possible '\n': show it now.
void Supervisor::flush_stale_cr(Child* c, Clock::time_point now) {
  for (int w = 0; w < 2; ++w) {
    if (c->fd[w] >= 0 && c->split[w].has_pending_cr() && now - c->last_data[w] > std::chrono::milliseconds(100)) {
      std::vector<Line> lines;
      c->split[w].flush_cr(&lines);
      handle_lines(c, w, &lines);
    }
  }
}

// A reaped child whose pipes something else still holds (a background child of the rank): kill
// its group after 1 s, stop reading after 3 s (or when giving up).
void Supervisor::close_held_pipes(Child* c, Clock::time_point now, bool give_up) {
  if (!c->leftovers_killed && now - c->reaped_at > std::chrono::milliseconds(1000)) {
    c->leftovers_killed = true;
    kill(-c->pid, SIGKILL);
  }
  if (now - c->reaped_at <= std::chrono::milliseconds(3000) && !give_up) return;
  for (int w = 0; w < 2; ++w) {
    if (c->fd[w] < 0) continue;
    read_child(c, w, false);
    std::vector<Line> lines;
    c->split[w].finish(&lines);
    handle_lines(c, w, &lines);
    close_fd(&c->fd[w]);
  }
}

// Finishes the children that are gone; true while some are not.
bool Supervisor::settle_children(bool give_up) {
  auto now = Clock::now();
  bool all_done = true;
  for (auto& c : children_) {
    if (c->finished) continue;
    flush_stale_cr(c.get(), now);
    if (c->reaped && (c->fd[0] >= 0 || c->fd[1] >= 0)) close_held_pipes(c.get(), now, give_up);
    if (c->reaped && c->fd[0] < 0 && c->fd[1] < 0) {
      finish_child(c.get());
      continue;
    }
    if (give_up && !c->reaped) {
      sink_->message("launch: giving up on " + (c->rank >= 0 ? "rank " + std::to_string(c->rank) : c->host) + " (pid " +
                     std::to_string(c->pid) + "), which does not exit");
      c->finished = true;
      continue;
    }
    all_done = false;
  }
  return !all_done;
}

bool Supervisor::step(int poll_ms) {
  auto now = Clock::now();
  check_timeout(now);
  check_stop_when();
  check_heartbeats(now);
  handle_stop_signals();
  escalate_stop(now);
  bool give_up = hard_killed_ && now >= give_up_at_;
  if (!poll_children(poll_ms)) return false;
  reap();
  judge_agent_reports();
  bool running = settle_children(give_up);
  running = settle_host_kills(give_up) || running;
  sink_->flush();
  return running;
}

int Supervisor::abort_start(const std::string& message, int exit_code) {
  sink_->message(message);
  begin_stop(SIGTERM, exit_code);
  failure_code_ = exit_code;
  return run();
}

int Supervisor::run() {
  while (step(stopping_ ? 20 : 100)) {}
  sink_->flush();
  for (auto& c : children_) {
    close_fd(&c->ctl_fd);
    close_fd(&c->fd[0]);
    close_fd(&c->fd[1]);
  }
  int code = failure_code_ >= 0 ? failure_code_ : (stopping_ ? stop_code_ : 0);
  if (failure_code_ < 0 && stop_exits_ > 0 && stop_exits_ == children_.size())
    sink_->message("launch: every rank stopped on " + signal_name(code - 128) + " (exit " + std::to_string(code) +
                   "): a saved stop for ./train, which continues with --resume");
  if (code == 0 && !sink_->file_error().empty()) {
    sink_->message(sink_->file_error());
    code = 1;
  }
  return code;
}
