// job: ./launch's start-up sequence for --gloo and --mpi (see job.h).
#include "launcher/job.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>

#include "comm/store_protocol.h"
#include "launcher/elastic.h"
#include "launcher/elastic_grow.h"
#include "launcher/elastic_hosts.h"
#include "launcher/fd_limit.h"
#include "launcher/job_plan.h"
#include "launcher/job_report.h"
#include "launcher/output.h"
#include "launcher/fdio.h"
#include "launcher/process.h"
#include "launcher/proctree.h"
#include "launcher/restart.h"
#include "launcher/ssh_check.h"
#include "comm/store_server.h"
#include "launcher/supervisor.h"
#include "launcher/watchdog.h"

using Clock = std::chrono::steady_clock;

namespace {

constexpr int kGoOn = -1;

// Reaps what is left (killed leftovers that came to us as subreaper), waiting at most ~200 ms.
void reap_leftovers() {
  for (int i = 0; i < 20; ++i) {
    pid_t w;
    while ((w = waitpid(-1, nullptr, WNOHANG)) > 0) {}
    if (w < 0) return;  // ECHILD: none left
    usleep(10 * 1000);
  }
}

// Teardown: every descendant still alive — what a local agent that was itself killed (a lost,
// silent one) left, which came to us as subreaper — is stopped (SIGTERM, SIGKILL after 1 s) and
// reaped. The watchdog is spared (it exits when stopped).
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

// The remote hosts of plan that do not answer `ssh host true` before deadline, with why.
std::vector<std::pair<std::string, std::string>> unreachable_hosts(const JobPlan& plan, Clock::time_point deadline) {
  std::vector<std::string> remote_names;
  for (const HostInfo& h : plan.hosts)
    if (!h.local && !plan.srun_steps) remote_names.push_back(h.name);  // srun reaches job steps' nodes
  std::vector<std::pair<std::string, std::string>> bad;
  if (remote_names.empty()) return bad;
  if (plan.opts.verbose) say_launch("checking " + std::to_string(remote_names.size()) + " host(s) over ssh");
  std::vector<std::string> res =
      check_ssh_hosts(plan.ssh, remote_names, deadline, [] { return launcher_stop_signal() != 0; });
  for (size_t k = 0; k < res.size() && !launcher_stop_signal(); ++k)
    if (!res[k].empty()) bad.push_back({remote_names[k], res[k]});
  return bad;
}

Clock::time_point start_deadline(const JobPlan& plan) {
  return Clock::now() + std::chrono::milliseconds(static_cast<long>(plan.opts.start_timeout * 1000));
}

int stopped_before_start() {
  const int sig = launcher_stop_signal();
  say_launch("received " + signal_name(sig) + " before the job started");
  return 128 + sig;
}

// Every ssh host answers `ssh host true` within --start-timeout, or nothing starts.
int reach_remote_hosts(const JobPlan& plan) {
  auto bad = unreachable_hosts(plan, start_deadline(plan));
  if (launcher_stop_signal()) return stopped_before_start();
  for (const auto& [host, why] : bad) say_launch("cannot reach " + host + " over ssh: " + why);
  return bad.empty() ? kGoOn : 1;
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
  if (r.local())
    say_launch(rank + display_command(r.request.argv));
  else
    say_launch(rank + display_command(r.spec.argv) + "  (agent runs: " + display_command(r.request.argv) + ")");
}

// Every rank, local, over ssh or as a job step, in rank order; the first that cannot start stops those started.
int start_gloo_ranks(const JobPlan& plan, const std::string& store_addr, const JobIdentity& id, Supervisor* sup) {
  for (const RankPlacement& p : plan.layout) {
    const HostInfo& h = plan.hosts[p.host_index];
    try {
      RankStart r = plan_gloo_rank(plan, p, store_addr, id);
      if (plan.opts.verbose) say_rank_command(r);
      sup->add_agent(p.rank, h.name, spawn_process(r.spec), encode_agent_request(r.request), r.kill_spec,
                     r.local() ? "agent" : r.via);
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
    store = std::make_unique<StoreServer>(plan.bind_addr, 0, id.secret, store_limits_for_ranks(plan.layout.size()));
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

// How an attempt ended, for the restart decision: failed = a rank failed or a host was lost (and
// the launcher was not told to stop); cause names it; host is where (host_lost: the host itself,
// not a rank on it).
struct AttemptEnd {
  bool failed = false;
  std::string cause, host;
  bool host_lost = false;
  bool grow = false;  // stopped to restart on a larger world (not a failure)
};

// One start of the job: a new identity (job id, secret) and store, the transport's start; the
// supervisor runs it to its end; then the same teardown as always.
int run_attempt(const JobPlan& plan, OutputSink* sink, Watchdog* watchdog, AttemptEnd* end,
                std::function<bool()> stop_when = nullptr) {
  *end = AttemptEnd();
  JobIdentity id;
  int code = make_identity(&id);
  if (code != kGoOn) return code;
  SupervisorConfig scfg;
  scfg.timeout_s = plan.opts.timeout;
  scfg.grace_ms = static_cast<int>(plan.opts.stop_grace * 1000);
  scfg.nonce = id.nonce;
  scfg.heartbeat_timeout_s = plan.opts.heartbeat_timeout;
  scfg.heartbeat_interval_s = plan.opts.heartbeat_interval;
  scfg.start_timeout_s = plan.opts.start_timeout;
  scfg.kill_timeout_s = plan.ssh.connect_timeout + 10;  // ssh's connect, then `launch --kill-job`'s 5 s
  scfg.stop_when = std::move(stop_when);
  scfg.mpi_ranks = plan.opts.np;
  watchdog->tag("BARESGD_JOB_ID=" + id.job_id);
  Supervisor sup(sink, watchdog, scfg);
  code = plan.opts.transport == Transport::kMpi ? run_mpirun(plan, id, &sup) : run_gloo(plan, id, &sup);
  stop_local_trees(watchdog);
  for (pid_t w; (w = waitpid(-1, nullptr, WNOHANG)) > 0;)  // what is gone already (run_job waits for the rest)
    if (w == watchdog->pid()) watchdog->forget();
  end->failed = code != 0 && sup.job_failed() && launcher_stop_signal() == 0;
  end->grow = sup.stopped_when_asked() && launcher_stop_signal() == 0;
  end->cause = sup.failure_cause();
  end->host = sup.failure_host();
  end->host_lost = sup.failure_host_lost();
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

int stopped_before_restart(OutputSink* sink) {
  const int sig = launcher_stop_signal();
  sink->message("launch: received " + signal_name(sig) + " before the restart; not restarting");
  sink->flush();
  return 128 + sig;
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
    AttemptEnd end;
    int code = run_attempt(plan, sink, watchdog, &end);
    const std::string& cause = end.cause;
    if (!end.failed || max == 0) return code;
    if (restarts == max) {
      sink->message(restarts_exhausted_line(max, cause));
      sink->flush();
      return code;
    }
    double wait = restart_backoff_s(restarts + 1);
    sink->message(restart_line(restarts + 1, max, wait, cause, resume_point(dir, rank0_here)));
    sink->flush();
    if (!backoff_sleep(wait)) return stopped_before_restart(sink);
    plan.opts.command = resume_command(plan.opts.command);
  }
}

// Elastic: the usable hosts (discovered once a second, or the -H hosts, blacklisted ones left
// out) until they give --min-np slots and answer over ssh (an unreachable host is lost:
// blacklisted); then the plan over them. An exit status when --elastic-timeout passes first.
int next_elastic_plan(const JobPlan& base, ElasticHosts* hosts, OutputSink* sink, JobPlan* plan) {
  const ElasticOptions& e = base.opts.elastic;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(e.elastic_timeout_s * 1000));
  for (bool said_waiting = false;;) {
    std::vector<std::string> back;
    try {
      hosts->update(discover_hosts(e, base.offered, base.opts.start_timeout), &back);
    } catch (const std::exception& bad) {
      sink->message(std::string("launch: ") + bad.what());
      return 1;
    }
    for (const std::string& line : back) sink->message(line);
    if (hosts->next_np() > 0) {
      if (replan_on_hosts(base, hosts->next_hosts(), plan) != kGoOn) return 1;
      auto bad = unreachable_hosts(*plan, start_deadline(*plan));
      if (launcher_stop_signal()) return stopped_before_start();
      if (bad.empty()) return kGoOn;
      for (const auto& [host, why] : bad) sink->message(hosts->record_lost(host, "cannot reach it over ssh: " + why));
      continue;
    }
    if (e.discovery_script.empty() && !hosts->cooling()) {  // -H's hosts never change: nothing to wait for
      sink->message("launch: the job cannot run: " + hosts->describe() +
                    " (-H hosts; a --host-discovery-script could add more)");
      return 1;
    }
    if (Clock::now() >= deadline) {
      sink->message("launch: the job cannot start: " + hosts->describe() + " for --elastic-timeout " +
                    seconds_text(e.elastic_timeout_s) + " s");
      return 1;
    }
    if (!said_waiting) sink->message("launch: waiting for usable slots: " + hosts->describe());
    said_waiting = true;
    sink->flush();
    if (!backoff_sleep(1.0)) return stopped_before_start();
  }
}

// "2 ranks on a:1, b:1"
std::string world_text(const JobPlan& plan) {
  std::string hosts;
  for (const HostSlots& h : plan.used) hosts += (hosts.empty() ? "" : ", ") + h.name + ":" + std::to_string(h.slots);
  return std::to_string(plan.opts.np) + (plan.opts.np == 1 ? " rank on " : " ranks on ") + hosts;
}

// The failing host is charged: lost, blacklisted at once; ranks failed twice, too (the notice said).
void charge_failure(const AttemptEnd& end, ElasticHosts* hosts, OutputSink* sink) {
  if (end.host.empty()) return;
  std::string notice =
      end.host_lost ? hosts->record_lost(end.host, end.cause) : hosts->record_failure(end.host, end.cause);
  if (!notice.empty()) sink->message(notice);
}

// --min-np / --host-discovery-script: each start runs on the hosts next_elastic_plan gives; after
// a failure the failing host is charged (lost: blacklisted at once; ranks failed twice: too) and
// the job restarts with --resume, at whatever world size the usable slots give. Restarts are
// unlimited (blacklisting bounds them) unless --max-restarts / --reset-limit is given. While it
// runs, more slots grow it at its next checkpoint (elastic_grow.h): a new start, not a restart.
int run_elastic(const JobPlan& base, OutputSink* sink, Watchdog* watchdog) {
  const ElasticOptions& e = base.opts.elastic;
  ElasticHosts hosts({std::max(1, e.min_np), e.max_np, 2}, e.cooldown);
  JobPlan next = base;
  const std::string dir = checkpoint_dir_of(base.opts.command);
  int last_np = 0;
  for (int starts = 1, restarts = 0;; ++starts) {
    JobPlan plan;
    int code = next_elastic_plan(next, &hosts, sink, &plan);
    if (code != kGoOn) return code;
    if (plan.opts.np != last_np || base.opts.verbose)
      sink->message("launch: elastic start " + std::to_string(starts) + ": " + world_text(plan) +
                    (last_np > 0 && plan.opts.np != last_np ? " (was " + std::to_string(last_np) + ")" : ""));
    last_np = plan.opts.np;
    const bool rank0_here = plan.hosts[plan.layout[0].host_index].local;
    ElasticGrowth growth(e, base.offered, base.opts.start_timeout, &hosts, dir, rank0_here, plan.used, sink);
    const bool polls = !e.discovery_script.empty() || e.cooldown.given();  // hosts may come (back) meanwhile
    AttemptEnd end;
    code =
        run_attempt(plan, sink, watchdog, &end, polls ? [&growth] { return growth.due(); } : std::function<bool()>());
    if (end.grow) {  // not a failure: no backoff, no restart counted
      next.opts.command = resume_command(next.opts.command);
      continue;
    }
    if (!end.failed) return code;
    charge_failure(end, &hosts, sink);
    if (base.opts.restarts_given && restarts == base.opts.max_restarts) {
      sink->message(restarts_exhausted_line(base.opts.max_restarts, end.cause));
      sink->flush();
      return code;
    }
    ++restarts;
    const double wait = restart_backoff_s(std::min(restarts, 6));
    sink->message("launch: elastic restart " + std::to_string(restarts) + " in " + seconds_text(wait) + " s after " +
                  end.cause + "; " + resume_point(dir, rank0_here));
    sink->flush();
    if (!backoff_sleep(wait)) return stopped_before_restart(sink);
    next.opts.command = resume_command(next.opts.command);
  }
}

// Output, signals and (--mpi) the watchdog, reachability, then the job (restarted as --max-restarts
// says). A Gloo rank's lifetime is its agent's: the agent stops the rank's tree when its stdin ends
// (this launcher gone, even by kill -9) or falls silent. mpirun's ranks have no agent: the watchdog
// stops mpirun's group and every process with the job's BARESGD_JOB_ID should the launcher die.
int run_job(const JobPlan& plan) {
  OutputSink sink(plan.opts.tag_format, plan.opts.timestamp);
  int code = open_output(plan, &sink);
  if (code != kGoOn) return code;
  if (plan.opts.verbose)
    for (const std::string& line : rank_table(plan)) say_launch(line);
  install_launcher_signal_handlers();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  Watchdog watchdog;  // not started for Gloo: every call on it is then a no-op
  try {
    if (plan.opts.transport == Transport::kMpi) watchdog.start(2000);
  } catch (const std::exception& e) {
    say_launch(std::string("cannot start the watchdog: ") + e.what());
    return 1;
  }
  // Said once the ranks are about to start (not before an unreachable host ends the job).
  const std::string over = oversubscribed_line(plan);
  if (plan.opts.elastic.enabled()) {
    if (!over.empty()) say_launch(over);
    code = run_elastic(plan, &sink, &watchdog);
  } else if ((code = reach_remote_hosts(plan)) == kGoOn) {
    if (!over.empty()) say_launch(over);
    code = run_with_restarts(plan, &sink, &watchdog);
  }
  watchdog.stop();
  reap_leftovers();
  return code;
}

// --dry-run of an elastic job: the plan of its first start (discovery runs once; no ssh check) and
// the policy.
int print_elastic_dry_run(const JobPlan& base) {
  const ElasticOptions& e = base.opts.elastic;
  ElasticHosts hosts({std::max(1, e.min_np), e.max_np, 2}, e.cooldown);
  try {
    hosts.update(discover_hosts(e, base.offered, base.opts.start_timeout));
  } catch (const std::exception& bad) {
    say_launch(bad.what());
    return 1;
  }
  if (hosts.next_np() == 0) {
    say_launch("the job would wait: " + hosts.describe());
    return 1;
  }
  JobPlan plan;
  if (replan_on_hosts(base, hosts.next_hosts(), &plan) != kGoOn) return 1;
  int code = print_dry_run(plan);
  if (code == 0)
    write_all(1,
              "elastic: " + std::to_string(std::max(1, e.min_np)) + " to " +
                  (e.max_np > 0 ? std::to_string(e.max_np) : std::string("every usable slot")) + " ranks, hosts " +
                  (e.discovery_script.empty() ? "of -H" : "from --host-discovery-script " + e.discovery_script) +
                  " at every start; a host is blacklisted after 2 rank failures or when it stops answering" +
                  (e.cooldown.given() ? ", until its cooldown is over (" + cooldown_flag_text(e.cooldown) + ")" : "") +
                  "\n");
  return code;
}

}  // namespace

int run_launch(const std::vector<std::string>& args) {
  JobPlan plan;
  int code = make_job_plan(args, &plan);
  if (code != kGoOn) return code;
  if (plan.opts.dry_run) return plan.opts.elastic.enabled() ? print_elastic_dry_run(plan) : print_dry_run(plan);
  // Enough descriptors for every rank, or one line before anything starts (launcher/fd_limit.h).
  const std::string fd_refusal = raise_fd_limit(std::max(plan.opts.np, plan.opts.elastic.max_np));
  if (!fd_refusal.empty()) {
    std::fprintf(stderr, "%s\n", fd_refusal.c_str());
    return 2;
  }
  return run_job(plan);
}
