// job_plan: everything ./launch decides before it starts anything — the flags, the rank layout,
// each host's address, the address the store and local ranks bind, the timeline file, and for
// each rank the environment and command line it will be started with. A run (job.cc) and
// --dry-run (job_report.h) both read this one plan, so the dry run shows what a run starts.
#pragma once
#include <string>
#include <vector>

#include "launcher/agent_protocol.h"
#include "launcher/hosts.h"
#include "launcher/mpirun.h"
#include "launcher/options.h"
#include "launcher/process.h"
#include "launcher/ssh.h"

// "launch: msg" on stderr.
void say_launch(const std::string& msg);

struct HostInfo {
  std::string name;
  bool local = true;
  std::string addr;  // the ranks' BARESGD_HOST_ADDR: the bind address here, ssh's address there
};

struct JobPlan {
  LaunchOptions opts;
  std::vector<RankPlacement> layout;
  std::vector<HostSlots> used;     // the hosts that run ranks, slots = ranks there
  std::vector<HostSlots> offered;  // every host of -H / the hostfile / the allocation, all slots
  std::vector<HostInfo> hosts;     // the same hosts, indexed by RankPlacement::host_index
  std::string host_source;         // "the Slurm allocation 1234 (hpc[01-02]: 2(x2))" or ""
  std::string cmd_path;            // CMD found on PATH
  SshOptions ssh;
  bool all_loopback = true;             // every remote host is a 127.x address
  std::string bind_addr;                // the store's, and local ranks' BARESGD_HOST_ADDR
  std::vector<std::string> base_env;    // ours, with HOROVOD_TIMELINE from --timeline-filename
  std::vector<std::string> rank_env;    // base_env without stale per-rank BARESGD_* (local ranks)
  std::vector<std::string> remote_env;  // rank_env without host-specific variables (remote ranks)
  bool user_set_blas = false;           // OPENBLAS_NUM_THREADS in our environment wins
  int cores = 1;                        // this machine's (affinity mask)
  std::string cwd, self;                // remote agents cd to cwd and run self --agent
  std::string slurm_job_id;             // the allocation the hosts came from, or ""
  // --gloo in a Slurm allocation (hosts from it, no --no-srun): every rank, this node's too, is a
  // job step, `srun ... self --agent` (srun.h), instead of a local process or ssh.
  bool srun_steps = false;
  std::string srun_path;
};

// What identifies one job; a dry run shows placeholders.
struct JobIdentity {
  std::string secret, job_id, nonce;
};

// Parses args and decides the plan (runs `ssh -G` to read host addresses, nothing else). Returns
// -1 to go on, else the exit status, its message said: 2 for a bad command line or host list, 0
// for --help (printed), 1 for other errors (a host that does not resolve, an unwritable
// timeline directory, ...).
int make_job_plan(const std::vector<std::string>& args, JobPlan* plan);

// An elastic attempt's plan: base with its ranks laid out over hosts (np = their slots) and the
// hosts' addresses resolved again. -1 to go on, else 1 (the message said).
int replan_on_hosts(const JobPlan& base, const std::vector<HostSlots>& hosts, JobPlan* plan);

// One Gloo rank as it will be started: every rank runs under `launch --agent` (agent.h), which
// receives request. spec starts that agent: directly for a rank on this machine, through ssh, or
// through srun for a job step.
struct RankStart {
  const RankPlacement* place = nullptr;
  const HostInfo* host = nullptr;
  SpawnSpec spec;
  std::string via;       // what starts the agent: "local", "ssh" or "srun"
  std::string program;   // local ranks: CMD found on PATH (the agent finds the same)
  AgentRequest request;  // the rank's command and variables
  SpawnSpec kill_spec;   // ssh host 'LAUNCH --kill-job ID' (job_kill.h), or srun's; none for local
  bool local() const { return via == "local"; }
  // The variables the rank gets from us, which the agent lays over its own (ours for a local rank,
  // the remote login's, the job step's) environment.
  const std::vector<std::string>& env() const { return request.env; }
};
// Throws std::runtime_error when ssh is not in PATH (for a remote rank).
RankStart plan_gloo_rank(const JobPlan& plan, const RankPlacement& p, const std::string& store_addr,
                         const JobIdentity& id);

// The most ranks any one host runs (all ranks when every host is this machine: loopback).
int busiest_host_ranks(const JobPlan& plan);
// What ./launch says when it asks Open MPI to yield (MpirunPlan::yield_set: the busiest host's
// ranks outnumber the cores), e.g. "4 ranks on this machine's 2 CPUs: Open MPI yields when idle
// (OMPI_MCA_mpi_yield_when_idle=1)".
std::string mpi_yield_line(const JobPlan& plan);
// The one line ./launch says when the busiest host's ranks outnumber the cores, "" otherwise:
// "4 ranks on this machine's 2 CPUs: times include waiting for a CPU (...)", with --mpi's yield
// ("...: Open MPI yields when idle (OMPI_MCA_mpi_yield_when_idle=1); times include ...").
std::string oversubscribed_line(const JobPlan& plan);

// mpirun's path; throws std::runtime_error("--mpi: mpirun not found in PATH ...").
std::string find_mpirun();
// The inputs of build_mpirun_plan (mpirun.h) for this job.
MpirunInputs plan_mpirun(const JobPlan& plan, const JobIdentity& id);
