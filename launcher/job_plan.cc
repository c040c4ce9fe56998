// job_plan: deciding what ./launch will start, before anything starts (see job_plan.h).
#include "launcher/job_plan.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

#include "comm/interface_choice.h"
#include "comm/loopback_spread.h"
#include "comm/slurm_scontrol.h"
#include "launcher/env.h"
#include "launcher/fdio.h"
#include "launcher/host_choice.h"
#include "launcher/netaddr.h"
#include "launcher/slurm_step.h"
#include "launcher/srun.h"
#include "src/program_name.h"
#include "src/oversubscription.h"
#include "src/thread_policy.h"

namespace {

constexpr int kGoOn = -1;

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string path_env() {
  const char* p = getenv("PATH");
  return p ? p : "";
}

// Flags; --help printed here.
int parse_command_line(const std::vector<std::string>& args, LaunchOptions* o) {
  try {
    *o = parse_launch_options(args);
  } catch (const UsageError& e) {
    say_launch(e.what());
    if (e.show_usage)
      write_all(2, with_program_name(std::string(launch_usage_line()) + "\n", "launch", invoked_name("launch")));
    return 2;
  }
  if (o->help) {
    write_all(1, with_program_name(launch_help_text(), "launch", invoked_name("launch")));
    return 0;
  }
  return kGoOn;
}

// Not as a task of an srun step (launcher/slurm_step.h): one line saying what to do instead.
int refuse_srun_task(JobPlan* plan) {
  const std::string why = srun_step_refusal(plan->opts, env_map(current_environment()));
  if (why.empty()) return kGoOn;
  say_launch(why);
  return 2;
}

// What the flags and the environment made ./launch decide on its own: a line each.
int say_notices(JobPlan* plan) {
  for (const std::string& line : plan->opts.notices) say_launch(line);
  return kGoOn;
}

// -H, --hostfile, the Slurm allocation or localhost:N (host_choice.h), and the ranks over their
// slots. In an allocation without -np, -np becomes the allocation's task count.
// An elastic job with a discovery script learns its hosts at each start (job.cc); one with -H or
// a hostfile and no -np starts with every slot, at most --max-np.
int elastic_np(const LaunchOptions& o, const std::vector<HostSlots>& hosts) {
  int slots = 0;
  for (const HostSlots& h : hosts) slots += h.slots;
  return o.elastic.max_np > 0 ? std::min(slots, o.elastic.max_np) : slots;
}

int lay_out_ranks(JobPlan* plan) {
  LaunchOptions& o = plan->opts;
  if (!o.elastic.discovery_script.empty()) return kGoOn;
  try {
    if (o.elastic.enabled() && !o.np_given && (!o.hosts.empty() || !o.hostfile.empty())) {
      o.np = elastic_np(o, o.hostfile.empty() ? parse_host_list(o.hosts) : read_hostfile(o.hostfile));
      o.np_given = true;
    }
    HostChoice choice = choose_hosts(o, env_map(current_environment()));
    std::vector<HostSlots> host_list =
        choice.source == HostSource::kHostfile ? read_hostfile(o.hostfile) : choice.hosts;
    o.np = choice.np;
    plan->host_source = choice.described();
    plan->offered = host_list;
    if (choice.source == HostSource::kSlurm) plan->slurm_job_id = choice.slurm.job_id;
    plan->layout = layout_ranks(host_list, o.np);
  } catch (const HostError& e) {
    say_launch(e.what());
    return 2;
  }
  plan->used = used_hosts(plan->layout);
  return kGoOn;
}

int find_command(JobPlan* plan) {
  const std::string& cmd = plan->opts.command[0];
  std::string why;
  plan->cmd_path = find_executable(cmd, path_env(), &why);
  if (plan->cmd_path.empty()) {
    say_launch("CMD '" + cmd + "': " + why);
    return 2;
  }
  return kGoOn;
}

// --gloo in an allocation whose hosts we use: the ranks are job steps, so srun must be here.
int choose_srun_steps(JobPlan* plan) {
  const LaunchOptions& o = plan->opts;
  if (plan->slurm_job_id.empty() || o.transport != Transport::kGloo || o.no_srun) return kGoOn;
  std::string why;
  plan->srun_path = find_executable("srun", path_env(), &why);
  if (plan->srun_path.empty()) {
    say_launch(srun_missing_message(plan->slurm_job_id));
    return 1;
  }
  plan->srun_steps = true;
  return kGoOn;
}

int check_mpi_ssh_files(JobPlan* plan) {
  const LaunchOptions& o = plan->opts;
  if (o.transport != Transport::kMpi) return kGoOn;
  for (const std::string* f : {&o.ssh_config, &o.ssh_identity})
    if (f->find_first_of(" \t\n") != std::string::npos) {
      say_launch("--mpi: ssh file '" + *f + "' contains whitespace, which mpirun's plm_rsh_args cannot carry");
      return 2;
    }
  return kGoOn;
}

// Two entries of the host list that are one machine (localhost and 127.0.0.1, or two ssh names
// of one address) would get separate local ranks and core shares: refused, naming both.
void refuse_aliases(const std::vector<HostInfo>& hosts) {
  for (size_t a = 0; a < hosts.size(); ++a)
    for (size_t b = a + 1; b < hosts.size(); ++b) {
      bool same = hosts[a].local ? hosts[b].local : (!hosts[b].local && hosts[a].addr == hosts[b].addr);
      if (!same) continue;
      std::string what = hosts[a].local ? "this machine" : "address " + hosts[a].addr;
      throw std::runtime_error("hosts " + hosts[a].name + " and " + hosts[b].name + " are the same machine (" + what +
                               "); list it once with all its slots");
    }
}

// The NodeAddr (as IPv4) of each job-step node of plan->used that is not this machine, asked
// of Slurm in one scontrol call: a node's name need not resolve (comm/slurm_scontrol.h).
std::map<std::string, std::string> step_node_addrs(const JobPlan& plan, const std::string& me) {
  std::vector<std::string> nodes;
  for (const HostSlots& h : plan.used)
    if (!is_local_host_name(h.name, me)) nodes.push_back(h.name);
  std::map<std::string, std::string> out;
  if (nodes.empty()) return out;
  const auto timeout = std::chrono::milliseconds(static_cast<long>(plan.opts.start_timeout * 1000));
  const std::vector<std::string> addrs = slurm_node_ipv4s(nodes, timeout);
  for (size_t k = 0; k < nodes.size(); ++k) out[nodes[k]] = addrs[k];
  return out;
}

// Local or remote, and a remote host's address: a job step's node at its Slurm NodeAddr, an ssh
// host as ssh would reach it (ssh -G, then DNS).
// first_remote_routable: the first remote address outside 127.0.0.0/8, if any.
int resolve_hosts(JobPlan* plan, std::string* first_remote_routable) {
  const LaunchOptions& o = plan->opts;
  plan->ssh.port = o.ssh_port;
  plan->ssh.identity = o.ssh_identity;
  plan->ssh.config = o.ssh_config;
  plan->ssh.connect_timeout = std::max(1, std::min(10, static_cast<int>(o.start_timeout)));
  set_server_alive(&plan->ssh, o.heartbeat_timeout);
  std::string me = this_hostname();
  try {
    const std::map<std::string, std::string> node_addrs =
        plan->srun_steps ? step_node_addrs(*plan, me) : std::map<std::string, std::string>();
    for (const HostSlots& h : plan->used) {
      HostInfo hi;
      hi.name = h.name;
      hi.local = is_local_host_name(h.name, me);
      if (!hi.local) {
        hi.addr = plan->srun_steps ? node_addrs.at(h.name) : resolve_ipv4(ssh_config_hostname(plan->ssh, h.name));
        if (!is_ipv4_loopback(hi.addr)) {
          plan->all_loopback = false;
          if (first_remote_routable->empty()) *first_remote_routable = hi.addr;
        }
      }
      plan->hosts.push_back(hi);
    }
    refuse_aliases(plan->hosts);
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  return kGoOn;
}

// --bind-addr, --network-interface's address, GLOO_SOCKET_IFNAME's, the source address towards the first routable
// remote host, or 127.0.0.1. Local hosts' ranks get it as their address.
int choose_bind_addr(JobPlan* plan, const std::string& first_remote_routable) {
  const LaunchOptions& o = plan->opts;
  plan->bind_addr = "127.0.0.1";
  try {
    if (!o.bind_addr.empty()) {
      std::string why = bind_addr_problem(o.bind_addr);
      if (!why.empty()) throw std::runtime_error(why);
      plan->bind_addr = o.bind_addr;
    } else if (!o.network_interface.empty()) {
      plan->bind_addr = interface_ipv4(o.network_interface);
    } else if (const char* gloo_if = std::getenv("GLOO_SOCKET_IFNAME"); gloo_if != nullptr && *gloo_if != 0) {
      plan->bind_addr = interface_choice_ipv4(choose_interface("", gloo_if));
    } else if (!plan->all_loopback) {
      plan->bind_addr = route_source_ipv4(first_remote_routable);
    }
  } catch (const std::exception& e) {
    say_launch(e.what());
    return 1;
  }
  for (HostInfo& h : plan->hosts)
    if (h.local) h.addr = plan->bind_addr;
  return kGoOn;
}

int resolve_addresses(JobPlan* plan) {
  std::string first_remote_routable;
  int code = resolve_hosts(plan, &first_remote_routable);
  return code != kGoOn ? code : choose_bind_addr(plan, first_remote_routable);
}

// Empty if a rank can create file (its directory exists and is writable, and file is not a
// directory or a read-only file), else why not.
std::string unwritable_reason(const std::string& file) {
  size_t slash = file.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return "directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "directory " + dir + " is not writable: " + std::strerror(errno);
  if (stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "it is a directory";
  if (access(file.c_str(), F_OK) == 0 && access(file.c_str(), W_OK) != 0) return std::strerror(errno);
  return "";
}

// Our environment, with --timeline-filename as HOROVOD_TIMELINE; whichever timeline file the
// ranks get must be writable here.
int read_environment(JobPlan* plan) {
  plan->base_env = current_environment();
  const std::string& flag = plan->opts.timeline_file;
  if (!flag.empty()) env_set(&plan->base_env, "HOROVOD_TIMELINE", flag);
  for (const auto& kv : plan->opts.horovod_env) env_set(&plan->base_env, kv.first, kv.second);
  std::string timeline;
  env_find(plan->base_env, "HOROVOD_TIMELINE", &timeline);
  std::string why = timeline.empty() ? "" : unwritable_reason(timeline);
  if (!why.empty()) {
    say_launch((flag.empty() ? "HOROVOD_TIMELINE=" : "--timeline-filename ") + timeline +
               ": cannot write the timeline there: " + why);
    return 1;
  }
  plan->rank_env = plan->base_env;
  env_remove_if(&plan->rank_env, is_launch_rank_env);
  plan->remote_env = plan->rank_env;
  env_remove_if(&plan->remote_env, is_host_specific_env);
  plan->user_set_blas = env_find(plan->base_env, "OPENBLAS_NUM_THREADS", nullptr) != nullptr;
  return kGoOn;
}

int read_process_facts(JobPlan* plan) {
  char buf[4096];
  if (getcwd(buf, sizeof buf)) plan->cwd = buf;
  plan->self = self_exe_path();
  plan->cores = cpu_count();
  return kGoOn;
}

std::vector<std::pair<std::string, std::string>> gloo_rank_variables(const RankPlacement& p, const HostInfo& h,
                                                                     const std::string& store_addr,
                                                                     const JobIdentity& id) {
  return {
      {"BARESGD_RANK", std::to_string(p.rank)},
      {"BARESGD_SIZE", std::to_string(p.size)},
      {"BARESGD_LOCAL_RANK", std::to_string(p.local_rank)},
      {"BARESGD_LOCAL_SIZE", std::to_string(p.local_size)},
      {"BARESGD_CROSS_RANK", std::to_string(p.cross_rank)},
      {"BARESGD_CROSS_SIZE", std::to_string(p.cross_size)},
      {"BARESGD_COMM", "gloo"},
      {"BARESGD_HOSTNAME", h.name},
      {"BARESGD_HOST_ADDR", h.addr},
      {"BARESGD_STORE_ADDR", store_addr},
      {"BARESGD_SECRET", id.secret},
      {"BARESGD_JOB_ID", id.job_id},
  };
}

// What the agent on the rank's host is asked to run.
void plan_agent_request(const JobPlan& plan, const JobIdentity& id, RankStart* r) {
  r->request.nonce = id.nonce;
  r->request.openblas_local_size = plan.user_set_blas ? 0 : r->place->local_size;
  r->request.env = plan.remote_env;
  r->request.argv = plan.opts.command;
  r->request.heartbeat_timeout_ms = std::lround(plan.opts.heartbeat_timeout * 1000);
  r->request.heartbeat_interval_ms =
      std::min(r->request.heartbeat_timeout_ms - 1, std::max(1L, std::lround(plan.opts.heartbeat_interval * 1000)));
}

// A rank on this machine: LAUNCH --agent as our child, the request on its stdin (the protocol of
// ssh's agents, over a pipe). The agent's environment is the rank's (with the job id, so `launch
// --kill-job` finds it too) and the request holds the whole of it, OPENBLAS_NUM_THREADS from our
// cores included: the rank gets what a local rank always got.
void plan_local_rank(const JobPlan& plan, const JobIdentity& id, RankStart* r) {
  r->via = "local";
  plan_agent_request(plan, id, r);
  r->program = plan.cmd_path;
  r->request.env = plan.rank_env;
  r->request.openblas_local_size = 0;
  if (!plan.user_set_blas)
    env_set(&r->request.env, "OPENBLAS_NUM_THREADS", std::to_string(cores_per_rank(plan.cores, r->place->local_size)));
  r->spec.path = plan.self;
  r->spec.argv = {plan.self, "--agent"};
  r->spec.env = plan.rank_env;
  env_set(&r->spec.env, "BARESGD_JOB_ID", id.job_id);
  r->spec.stdin_pipe = true;
  r->spec.pdeathsig = 0;  // the launcher gone is EOF on that pipe, as for every agent
}

// ssh -T host 'cd CWD && exec env BARESGD_JOB_ID=ID LAUNCH --agent'; the request goes to the agent on
// its stdin.
void plan_remote_rank(const JobPlan& plan, const JobIdentity& id, RankStart* r) {
  r->via = "ssh";
  plan_agent_request(plan, id, r);
  r->spec.argv = ssh_base_argv(plan.ssh);
  r->spec.argv.push_back("-T");
  r->spec.argv.push_back(r->host->name);
  // The agent carries the job id in its own environment, so `launch --kill-job` finds it too.
  r->spec.argv.push_back("cd " + shell_quote(plan.cwd) + " && exec env BARESGD_JOB_ID=" + id.job_id + " " +
                         shell_quote(plan.self) + " --agent");
  std::string why;
  r->spec.path = find_executable("ssh", path_env(), &why);
  if (r->spec.path.empty()) throw std::runtime_error("ssh not found in PATH");
  r->spec.env = plan.base_env;
  r->spec.stdin_pipe = true;
  r->spec.pdeathsig = SIGTERM;
  // Should the host's agent go silent: ssh -T host 'exec LAUNCH --kill-job ID' (job_kill.h).
  r->kill_spec.path = r->spec.path;
  r->kill_spec.argv = ssh_base_argv(plan.ssh);
  r->kill_spec.argv.insert(r->kill_spec.argv.end(),
                           {"-T", r->host->name, "exec " + shell_quote(plan.self) + " --kill-job " + id.job_id});
  r->kill_spec.env = plan.base_env;
}

// A job step: srun ... LAUNCH --agent on the rank's node (srun.h). srun passes its environment,
// which holds the job id (for `launch --kill-job`) but not the secret: that travels in the
// request, on srun's stdin. SIGTERM to srun (the launcher gone) reaches the agent as SIGTERM.
void plan_srun_rank(const JobPlan& plan, const JobIdentity& id, RankStart* r) {
  r->via = "srun";
  plan_agent_request(plan, id, r);
  SrunStep step{plan.srun_path, r->host->name, plan.cwd, "rank" + std::to_string(r->place->rank)};
  r->spec.path = plan.srun_path;
  r->spec.argv = srun_step_argv(step, {plan.self, "--agent"});
  r->spec.env = plan.rank_env;
  env_set(&r->spec.env, "BARESGD_JOB_ID", id.job_id);
  r->spec.stdin_pipe = true;
  r->spec.pdeathsig = SIGTERM;
  // Should the agent go silent: a step on that node running LAUNCH --kill-job ID.
  step.name = "kill-job";
  r->kill_spec.path = plan.srun_path;
  r->kill_spec.argv = srun_step_argv(step, {plan.self, "--kill-job", id.job_id});
  r->kill_spec.env = plan.rank_env;
}

}  // namespace

void say_launch(const std::string& msg) { write_all(2, "launch: " + msg + "\n"); }

int make_job_plan(const std::vector<std::string>& args, JobPlan* plan) {
  int code = parse_command_line(args, &plan->opts);
  if (code != kGoOn) return code;
  for (int (*step)(JobPlan*) : {refuse_srun_task, say_notices, lay_out_ranks, find_command, choose_srun_steps,
                                check_mpi_ssh_files, resolve_addresses, read_environment, read_process_facts}) {
    code = step(plan);
    if (code != kGoOn) return code;
  }
  return kGoOn;
}

int replan_on_hosts(const JobPlan& base, const std::vector<HostSlots>& hosts, JobPlan* plan) {
  *plan = base;
  plan->opts.np = 0;
  for (const HostSlots& h : hosts) plan->opts.np += h.slots;
  try {
    plan->layout = layout_ranks(hosts, plan->opts.np);
  } catch (const HostError& e) {
    say_launch(e.what());
    return 1;
  }
  plan->used = used_hosts(plan->layout);
  plan->hosts.clear();
  plan->all_loopback = true;
  return resolve_addresses(plan) == kGoOn ? kGoOn : 1;
}

RankStart plan_gloo_rank(const JobPlan& plan, const RankPlacement& p, const std::string& store_addr,
                         const JobIdentity& id) {
  RankStart r;
  r.place = &p;
  r.host = &plan.hosts[p.host_index];
  if (plan.srun_steps) {
    plan_srun_rank(plan, id, &r);
  } else if (r.host->local) {
    plan_local_rank(plan, id, &r);
  } else {
    plan_remote_rank(plan, id, &r);
  }
  for (auto& kv : gloo_rank_variables(p, *r.host, store_addr, id)) env_set(&r.request.env, kv.first, kv.second);
  return r;
}

int busiest_host_ranks(const JobPlan& plan) {
  if (plan.all_loopback) return std::max(1, plan.opts.np);  // loopback "hosts" all share this machine's cores
  int max_local = 1;
  for (const HostSlots& h : plan.used) max_local = std::max(max_local, h.slots);
  return max_local;
}

std::string mpi_yield_line(const JobPlan& plan) {
  const std::string ranks = std::to_string(busiest_host_ranks(plan)),
                    cpus = std::to_string(plan.cores) + (plan.cores == 1 ? " CPU" : " CPUs");
  return (plan.all_loopback
              ? ranks + " ranks on this machine's " + cpus
              : ranks + " ranks on one host, more than this machine's " + cpus + " (taken for every host's)") +
         ": Open MPI yields when idle (OMPI_MCA_mpi_yield_when_idle=1)";
}

std::string oversubscribed_line(const JobPlan& plan) {
  if (busiest_host_ranks(plan) <= plan.cores) return "";
  const bool yields =
      plan.opts.transport == Transport::kMpi && !env_find(plan.base_env, "OMPI_MCA_mpi_yield_when_idle", nullptr);
  std::string line = mpi_yield_line(plan);
  line = yields ? line + "; " : line.substr(0, line.find(": Open MPI yields")) + ": ";
  return line + oversubscribed_consequence();
}

std::string find_mpirun() {
  std::string why, path = find_executable("mpirun", path_env(), &why);
  if (path.empty())
    throw std::runtime_error("--mpi: mpirun not found in PATH (install Open MPI: apt-get install openmpi-bin)");
  return path;
}

MpirunInputs plan_mpirun(const JobPlan& plan, const JobIdentity& id) {
  MpirunInputs in;
  in.np = plan.opts.np;
  in.hosts = plan.used;
  in.command = plan.opts.command;
  in.base_env = plan.base_env;
  in.ssh = plan.ssh;
  in.as_root = geteuid() == 0;
  in.all_loopback = plan.all_loopback;
  in.network_interface = plan.opts.network_interface;
  int max_local = 1;
  for (const HostSlots& h : plan.used) max_local = std::max(max_local, h.slots);
  in.openblas_threads = std::max(1, plan.cores / max_local);
  in.oversubscribed = busiest_host_ranks(plan) > plan.cores;
  in.job_id = id.job_id;
  in.secret = id.secret;
  in.extra_env = plan.opts.mpi_env;
  in.mpi_args = plan.opts.mpi_args;
  in.bind_to = plan.opts.bind_to;
  in.map_by = plan.opts.map_by;
  return in;
}
