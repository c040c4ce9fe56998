// agent: `launch --agent`, runs one rank on behalf of ./launch, here or on a remote host (see agent.h).
#include "launcher/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "comm/big_endian.h"
#include "launcher/agent_protocol.h"
#include "launcher/env.h"
#include "launcher/fdio.h"
#include "launcher/process.h"
#include "launcher/proctree.h"
#include "launcher/watchdog.h"
#include "src/thread_policy.h"

namespace {

using Clock = std::chrono::steady_clock;

int g_sig_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_sig_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

void agent_error(const std::string& msg) {
  std::string line = "launch --agent: " + msg + "\n";
  write_all(2, line);
}

// Reads exactly n bytes from fd 0 before deadline. False on EOF, error or timeout.
bool read_exact(std::string* out, size_t n, Clock::time_point deadline) {
  out->clear();
  while (out->size() < n) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    struct pollfd p = {0, POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[65536];
    size_t want = std::min(sizeof buf, n - out->size());
    ssize_t got = read(0, buf, want);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    out->append(buf, static_cast<size_t>(got));
  }
  return true;
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

bool group_alive(pid_t pg) { return kill(-pg, 0) == 0 || errno == EPERM; }

bool install_agent_signals() {
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of the rank come back to us to be reaped
  if (pipe2(g_sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    agent_error(std::string("pipe: ") + std::strerror(errno));
    return false;
  }
  install_signal_handler(on_signal, {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1});
  return true;
}

// 1. The spawn request: magic, u32 big-endian length, frame. False (said) when it is not one.
bool read_spawn_request(AgentRequest* req) {
  auto header_deadline = Clock::now() + std::chrono::seconds(60);
  std::string magic, len_bytes, body;
  if (!read_exact(&magic, std::strlen(kAgentMagic), header_deadline) || magic != kAgentMagic) {
    agent_error("no spawn request from the launcher on stdin (is this `launch --agent` run by ./launch?)");
    return false;
  }
  if (!read_exact(&len_bytes, 4, header_deadline)) {
    agent_error("truncated spawn request");
    return false;
  }
  const uint32_t len = load_u32be(len_bytes.data());
  if (len > kAgentMaxFrame || !read_exact(&body, len, header_deadline) || !decode_agent_request(body, req)) {
    agent_error("malformed spawn request");
    return false;
  }
  return true;
}

// What the rank execs: its program found on the merged PATH, with argv as the launcher sent it
// (argv[0] as typed, as a shell gives it) and the environment.
struct RankExec {
  std::string program;
  std::vector<std::string> argv, env;
};

// 2. The rank's environment: ours (the remote login's), overlaid with the launcher's, and
//    OPENBLAS_NUM_THREADS from this host's cores unless the user set it. False when the program
//    is not found here (said).
bool prepare_rank_exec(const AgentRequest& req, RankExec* x) {
  x->env = current_environment();
  for (const std::string& e : req.env) env_set(&x->env, e.substr(0, e.find('=')), e.substr(e.find('=') + 1));
  bool user_set_blas = false;
  for (const std::string& e : req.env)
    if (e.compare(0, 21, "OPENBLAS_NUM_THREADS=") == 0) user_set_blas = true;
  if (req.openblas_local_size > 0 && !user_set_blas)
    env_set(&x->env, "OPENBLAS_NUM_THREADS", std::to_string(cores_per_rank(cpu_count(), req.openblas_local_size)));
  std::string path_var;
  env_find(x->env, "PATH", &path_var);
  std::string why;
  std::string prog = find_executable(req.argv[0], path_var, &why);
  if (prog.empty()) {
    agent_error("cannot run '" + req.argv[0] + "' on this host: " + why);
    return false;
  }
  x->program = prog;
  x->argv = req.argv;
  return true;
}

// 3. Start the rank (process.h's child set-up: its own group, SIGKILL should this agent die,
//    stdin /dev/null, our stdout and stderr), held until its pid line is out so that line precedes
//    all its output. The watchdog (see watchdog.h) takes the rank's whole group down should this
//    agent be killed. Returns the rank's pid, or -1 (said).
pid_t start_rank(const RankExec& x, const std::string& nonce, Watchdog* watchdog) {
  SpawnSpec spec;
  spec.path = x.program;
  spec.argv = x.argv;
  spec.env = x.env;
  spec.capture_output = false;
  spec.held = true;
  SpawnedChild rank;
  try {
    rank = spawn_process(spec);
  } catch (const std::exception& e) {
    agent_error(e.what());
    return -1;
  }
  watchdog->watch(rank.pid);
  write_all(2, agent_pid_line(nonce, rank.pid));
  if (int e = release_child(&rank)) agent_error(std::string("exec failed: ") + std::strerror(e));
  return rank.pid;
}

// 4. Supervising the rank's tree until it is gone. The tree is every descendant of this agent
//    (a child subreaper, so orphans that called setsid come back to us), found through /proc's
//    ppid chains (proctree.h); the watchdog is not part of it.
struct RankWatch {
  pid_t pid = -1;
  std::string nonce;
  std::set<pid_t> keep;  // the watchdog
  bool stdin_open = true, rank_done = false, leftovers_signalled = false;
  int rank_status = 0;
  Clock::time_point kill_at = Clock::time_point::max();  // SIGKILL the tree (after EOF)
  Clock::time_point leftover_kill_at = Clock::time_point::max();
  // Heartbeats (off when timeout is zero): we say "alive" every interval; the launcher must send
  // a byte within timeout.
  std::chrono::milliseconds hb_timeout{0}, hb_interval{0};
  Clock::time_point last_heard, next_alive;
};

const auto kGrace = std::chrono::milliseconds(3000);

// sig to the rank's group and to every other process of its tree.
void signal_tree(const RankWatch& w, int sig) {
  kill(-w.pid, sig);
  signal_descendants(getpid(), sig, w.keep);
}

// After the rank: SIGTERM its leftovers, then SIGKILL them; after EOF: SIGKILL when grace is over.
void escalate_kills(RankWatch* w, Clock::time_point now) {
  if (w->rank_done && !w->leftovers_signalled) {
    signal_tree(*w, SIGTERM);
    w->leftovers_signalled = true;
    w->leftover_kill_at = now + std::chrono::milliseconds(1000);
  } else if (w->rank_done && now >= w->leftover_kill_at) {
    signal_tree(*w, SIGKILL);
    w->leftover_kill_at = now + std::chrono::milliseconds(200);
  }
  if (now >= w->kill_at) {
    signal_tree(*w, SIGKILL);
    w->kill_at = now + std::chrono::milliseconds(500);
  }
}

// SIGTERM / SIGINT / SIGHUP / SIGUSR1 sent to us go to the rank's tree.
void forward_signals(const RankWatch& w) {
  unsigned char sigs[64];
  ssize_t ns;
  while ((ns = read(g_sig_pipe[0], sigs, sizeof sigs)) > 0) {
    for (ssize_t k = 0; k < ns; ++k)
      if (sigs[k] != SIGCHLD) signal_tree(w, sigs[k]);
  }
}

// Reap the rank and any orphans that came to us.
void reap_children(RankWatch* w, Watchdog* watchdog) {
  while (true) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p <= 0) break;
    if (p == w->pid) {
      w->rank_done = true;
      w->rank_status = st;
    }
    if (p == watchdog->pid()) watchdog->forget();
  }
}

// The launcher is gone (EOF, a read error or no heartbeat): stop the rank's tree, no more reading.
void lose_launcher(RankWatch* w) {
  w->stdin_open = false;
  if (!w->rank_done) {
    signal_tree(*w, SIGTERM);
    w->kill_at = Clock::now() + kGrace;
  }
}

// Control bytes from the launcher (any byte, a ping too, proves it alive).
void read_control(RankWatch* w) {
  char buf[256];
  ssize_t n = read(0, buf, sizeof buf);
  if (n > 0) {
    w->last_heard = Clock::now();
    for (ssize_t k = 0; k < n; ++k) {
      int s = agent_control_signal(buf[k]);
      if (s) signal_tree(*w, s);
    }
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    lose_launcher(w);
  }
}

// Heartbeats both ways: "alive" out every interval; silence from the launcher for the timeout
// (a partition, a stopped launcher, a launcher killed while the link was down) stops the rank.
void keep_heartbeats(RankWatch* w, Clock::time_point now) {
  if (w->hb_timeout.count() == 0) return;
  if (now >= w->next_alive) {
    write_all(2, agent_alive_line(w->nonce, getpid()));
    w->next_alive = now + w->hb_interval;
  }
  // The agent may itself have been descheduled or stopped: read the pings waiting on stdin first.
  if (w->stdin_open && now - w->last_heard >= w->hb_timeout) read_control(w);
  if (w->stdin_open && now - w->last_heard >= w->hb_timeout) {
    char secs[32];
    snprintf(secs, sizeof secs, "%g", w->hb_timeout.count() / 1000.0);
    agent_error(std::string("no heartbeat from the launcher for ") + secs + " s; stopping the rank");
    lose_launcher(w);
  }
}

bool tree_gone(const RankWatch& w) {
  if (group_alive(w.pid)) return false;
  for (pid_t p : descendants_of(getpid()))
    if (!w.keep.count(p)) return false;
  return true;
}

// Returns the rank's wait status once its whole tree is gone.
int supervise_rank(pid_t pid, const AgentRequest& req, Watchdog* watchdog) {
  RankWatch w;
  w.pid = pid;
  w.nonce = req.nonce;
  if (watchdog->pid() > 0) w.keep.insert(watchdog->pid());
  w.hb_timeout = std::chrono::milliseconds(req.heartbeat_timeout_ms);
  w.hb_interval = std::chrono::milliseconds(req.heartbeat_interval_ms);
  w.last_heard = Clock::now();
  w.next_alive = w.last_heard + w.hb_interval;
  set_nonblocking(0);
  while (true) {
    if (w.rank_done && tree_gone(w)) break;
    auto now = Clock::now();
    escalate_kills(&w, now);
    keep_heartbeats(&w, now);
    struct pollfd p[2];
    int np = 0;
    p[np++] = {g_sig_pipe[0], POLLIN, 0};
    if (w.stdin_open) p[np++] = {0, POLLIN, 0};
    if (poll(p, np, 50) < 0 && errno != EINTR) break;
    forward_signals(w);
    reap_children(&w, watchdog);
    if (w.stdin_open) read_control(&w);
  }
  return w.rank_status;
}

}  // namespace

int agent_main() {
  if (!install_agent_signals()) return 1;
  AgentRequest req;
  if (!read_spawn_request(&req)) return 2;
  RankExec exec;
  if (!prepare_rank_exec(req, &exec)) {
    write_all(2, agent_status_line(req.nonce, 127 << 8));
    return 127;
  }
  Watchdog watchdog;
  try {
    watchdog.start(2000);
  } catch (const std::exception& e) {
    agent_error(std::string("cannot start the watchdog: ") + e.what());
    return 1;
  }
  if (req.heartbeat_timeout_ms > 0) write_all(2, agent_alive_line(req.nonce, getpid()));
  pid_t pid = start_rank(exec, req.nonce, &watchdog);
  if (pid < 0) return 1;
  int rank_status = supervise_rank(pid, req, &watchdog);
  watchdog.unwatch(pid);
  watchdog.stop();
  write_all(2, agent_status_line(req.nonce, rank_status));
  return wait_status_code(rank_status);
}
