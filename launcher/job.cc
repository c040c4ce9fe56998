// job: ./launch's start-up sequence for --gloo and --mpi (see job.h).
#include "launcher/job.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>

#include "comm/store_protocol.h"
#include "launcher/job_plan.h"
#include "launcher/job_report.h"
#include "launcher/output.h"
#include "launcher/fdio.h"
#include "launcher/process.h"
#include "launcher/proctree.h"
#include "launcher/restart.h"
#include "launcher/ssh_check.h"
#include "launcher/store_server.h"
#include "launcher/supervisor.h"
#include "launcher/watchdog.h"

using Clock = std::chrono::steady_clock;

namespace {

constexpr int kGoOn = -1;

// Reaps what is left (killed leftovers that came to us as subreaper), waiting at most ~200 ms.
void reap_leftovers() {
  for (int i = 0; i < 20; ++i) {
    pid_t w;
    while ((w = waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (w < 0) return;  // ECHILD: none left
    usleep(10 * 1000);
  }
}

// Teardown: every descendant still alive — a local rank's child that left its group with setsid,
// which came to us as the ranks' subreaper — is stopped (SIGTERM, SIGKILL after 1 s) and reaped.
// The watchdog is spared (it exits when stopped).
void stop_local_trees(Watchdog* watchdog) {
  std::set<pid_t> keep;
  if (watchdog->pid() > 0) keep.insert(watchdog->pid());
  stop_descendants(getpid(), 1000, keep, false);
}

int print_dry_run(const JobPlan& plan) {
  try {
    write_all(1, dry_run_report(plan));
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  return 0;
}

// Tags name each rank's host; --output-filename files are opened now.
int open_output(const JobPlan& plan, OutputSink* sink) {
  std::vector<std::string> host_of_rank;
  for (const RankPlacement& p : plan.layout) host_of_rank.push_back(p.host);
  sink->set_hosts(host_of_rank);
  if (plan.opts.output_dir.empty()) return kGoOn;
  try {
    sink->open_files(plan.opts.output_dir, plan.opts.np);
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  return kGoOn;
}

// Every ssh host answers `ssh host true` within --start-timeout, or nothing starts.
int reach_remote_hosts(const JobPlan& plan, Clock::time_point start) {
  std::vector<std::string> remote_names;
  for (const HostInfo& h : plan.hosts)
    if (!h.local && !plan.srun_steps) remote_names.push_back(h.name);  // srun reaches job steps' nodes
  if (!remote_names.empty()) {
    if (plan.opts.verbose) say_launch("checking " + std::to_string(remote_names.size()) + " host(s) over ssh");
    auto deadline = start + std::chrono::milliseconds(static_cast<long>(plan.opts.start_timeout * 1000));
    std::vector<std::string> res =
        check_ssh_hosts(plan.ssh, remote_names, deadline, [] { return launcher_stop_signal() != 0; });
    bool bad = false;
    for (size_t k = 0; k < res.size() && !launcher_stop_signal(); ++k) {
      if (res[k].empty()) continue;
      say_launch("cannot reach " + remote_names[k] + " over ssh: " + res[k]);
      bad = true;
    }
    if (bad && !launcher_stop_signal()) return 1;
  }
  if (int sig = launcher_stop_signal()) {
    say_launch("received " + signal_name(sig) + " before the job started");
    return 128 + sig;
  }
  return kGoOn;
}

int make_identity(JobIdentity* id) {
  try {
    id->secret = random_secret_hex();
    id->job_id = to_hex(random_bytes(8));
    id->nonce = to_hex(random_bytes(8));
  } catch (const std::exception& e) {
    say_launch(std::string("cannot make the job secret: ") + e.what());
    return 1;
  }
  return kGoOn;
}

// mpirun starts (and tags) every rank; we re-tag its output.
int run_mpirun(const JobPlan& plan, const JobIdentity& id, Supervisor* sup) {
  SpawnSpec spec;
  try {
    spec.path = find_mpirun();
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  MpirunPlan mp = build_mpirun_plan(plan_mpirun(plan, id));
  if (plan.opts.verbose) say_launch("running: " + display_command(mp.argv));
  spec.argv = mp.argv;
  spec.env = mp.env;
  spec.pdeathsig = SIGTERM;  // mpirun tears its job down on SIGTERM
  try {
    sup->add_mpirun(spawn_process(spec));
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  return sup->run();
}

void say_rank_command(const RankStart& r) {
  std::string rank = "rank " + std::to_string(r.place->rank) + ": ";
  if (!r.via_agent) say_launch(rank + display_command(r.spec.argv));
  else say_launch(rank + display_command(r.spec.argv) + "  (agent runs: " + display_command(r.request.argv) + ")");
}

// Every rank, local, over ssh or as a job step, in rank order; the first that cannot start stops those started.
int start_gloo_ranks(const JobPlan& plan, const std::string& store_addr, const JobIdentity& id, Supervisor* sup) {
  for (const RankPlacement& p : plan.layout) {
    const HostInfo& h = plan.hosts[p.host_index];
    try {
      RankStart r = plan_gloo_rank(plan, p, store_addr, id);
      if (plan.opts.verbose) say_rank_command(r);
      if (!r.via_agent) sup->add_local(p.rank, h.name, spawn_process(r.spec));
      else sup->add_remote(p.rank, h.name, spawn_process(r.spec), encode_agent_request(r.request), r.kill_spec, r.via);
    } catch (const std::exception& e) {
      return sup->abort_start("launch: cannot start rank " + std::to_string(p.rank) + " on " + h.name + ": " + e.what(),
                              1);
    }
  }
  return sup->run();
}

// The rendezvous store on the bind address, then the ranks.
int run_gloo(const JobPlan& plan, const JobIdentity& id, Supervisor* sup) {
  std::unique_ptr<StoreServer> store;
  try {
    store = std::make_unique<StoreServer>(plan.bind_addr, 0, id.secret);
    store->start();
  } catch (const std::exception& e) {
    say_launch(std::string("cannot start the rendezvous store: ") + e.what());
    return 1;
  }
  std::string store_addr = plan.bind_addr + ":" + std::to_string(store->port());
  if (plan.opts.verbose) say_launch("store listening on " + store_addr + " (job " + id.job_id + ")");
  int code = start_gloo_ranks(plan, store_addr, id, sup);
  store->stop();
  return code;
}

// One start of the job: a new identity (job id, secret) and store, the transport's start; the
// supervisor runs it to its end; then the same teardown as always. *failed: a rank failed or a
// host was lost (and the launcher was not told to stop), with *cause naming it.
int run_attempt(const JobPlan& plan, OutputSink* sink, Watchdog* watchdog, bool* failed, std::string* cause) {
  *failed = false;
  JobIdentity id;
  int code = make_identity(&id);
  if (code != kGoOn) return code;
  SupervisorConfig scfg;
  scfg.timeout_s = plan.opts.timeout;
  scfg.grace_ms = 3000;
  scfg.nonce = id.nonce;
  scfg.heartbeat_timeout_s = plan.opts.heartbeat_timeout;
  scfg.heartbeat_interval_s = plan.opts.heartbeat_interval;
  scfg.start_timeout_s = plan.opts.start_timeout;
  scfg.kill_timeout_s = plan.ssh.connect_timeout + 10;  // ssh's connect, then `launch --kill-job`'s 5 s
  watchdog->tag("BARESGD_JOB_ID=" + id.job_id);
  Supervisor sup(sink, watchdog, scfg);
  code = plan.opts.transport == Transport::kMpi ? run_mpirun(plan, id, &sup) : run_gloo(plan, id, &sup);
  stop_local_trees(watchdog);
  for (pid_t w; (w = waitpid(-1, nullptr, WNOHANG)) > 0;)  // what is gone already (run_job waits for the rest)
    if (w == watchdog->pid()) watchdog->forget();
  *failed = code != 0 && sup.job_failed() && launcher_stop_signal() == 0;
  *cause = sup.failure_cause();
  return code;
}

// Sleeps seconds unless SIGINT/SIGTERM/SIGHUP comes; false then.
bool backoff_sleep(double seconds) {
  auto until = Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (Clock::now() < until) {
    if (launcher_stop_signal()) return false;
    usleep(20 * 1000);
  }
  return launcher_stop_signal() == 0;
}

// --max-restarts: the job runs; after a failure it runs again (the same rank table, its command
// with --resume) after a backoff, up to max_restarts times. One line per restart, one when they
// are used up.
int run_with_restarts(const JobPlan& first, OutputSink* sink, Watchdog* watchdog) {
  JobPlan plan = first;
  const int max = plan.opts.max_restarts;
  const std::string dir = checkpoint_dir_of(plan.opts.command);
  const bool rank0_here = !plan.layout.empty() && plan.hosts[plan.layout[0].host_index].local;
  for (int restarts = 0;; ++restarts) {
    bool failed = false;
    std::string cause;
    int code = run_attempt(plan, sink, watchdog, &failed, &cause);
    if (!failed || max == 0) return code;
    if (restarts == max) {
      sink->message(restarts_exhausted_line(max, cause));
      sink->flush();
      return code;
    }
    double wait = restart_backoff_s(restarts + 1);
    sink->message(restart_line(restarts + 1, max, wait, cause, resume_point(dir, rank0_here)));
    sink->flush();
    if (!backoff_sleep(wait)) {
      int sig = launcher_stop_signal();
      sink->message("launch: received " + signal_name(sig) + " before the restart; not restarting");
      sink->flush();
      return 128 + sig;
    }
    plan.opts.command = resume_command(plan.opts.command);
  }
}

// Output, signals and the watchdog, reachability, then the job (restarted as --max-restarts says).
int run_job(const JobPlan& plan) {
  OutputSink sink(plan.opts.tag_format, plan.opts.timestamp);
  int code = open_output(plan, &sink);
  if (code != kGoOn) return code;
  if (plan.opts.verbose)
    for (const std::string& line : rank_table(plan)) say_launch(line);
  install_launcher_signal_handlers();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  Watchdog watchdog;
  try {
    watchdog.start(2000);
  } catch (const std::exception& e) {
    say_launch(std::string("cannot start the watchdog: ") + e.what());
    return 1;
  }
  if ((code = reach_remote_hosts(plan, Clock::now())) != kGoOn) return code;
  code = run_with_restarts(plan, &sink, &watchdog);
  watchdog.stop();
  reap_leftovers();
  return code;
}

}  // namespace

int run_launch(const std::vector<std::string>& args) {
  JobPlan plan;
  int code = make_job_plan(args, &plan);
  if (code != kGoOn) return code;
  return plan.opts.dry_run ? print_dry_run(plan) : run_job(plan);
}
