// rank_env: who this process is, from the environment.
//
// Sources, first match wins:
//   1. our launcher (./launch): BARESGD_RANK / BARESGD_SIZE present;
//   2. Open MPI's mpirun: OMPI_COMM_WORLD_RANK present;
//   2b. PyTorch's torchrun: RANK / WORLD_SIZE / LOCAL_RANK present (comm/torchrun_env.cc);
//   3. Slurm's srun: SLURM_PROCID present and SLURM_STEP_ID (or SLURM_STEPID) an ordinary step
//      id. An sbatch script also has SLURM_PROCID=0 and the allocation's SLURM_NTASKS, but it is
//      the job's batch step, not one of srun's tasks: Slurm sets no step id there (slurmstepd
//      only writes a non-negative one, and the batch step's is 0xfffffffb, 0xfffffffe before
//      Slurm 20.11) or, in releases that print it, that value as a negative or >= 0xfffffff0
//      number. Such a step runs as a single process, with a notice saying so;
//   4. otherwise a single process.
// Per-job variables read with every source: BARESGD_COMM (backend preference: gloo|mpi|single),
// BARESGD_HOSTNAME, BARESGD_HOST_ADDR, BARESGD_STORE_ADDR, BARESGD_SECRET, BARESGD_JOB_ID,
// BARESGD_MUNGE_SOCKET (munged's socket for the Gloo rendezvous under srun, comm/slurm_store.h).
// Every integer must parse completely; inconsistent values throw std::runtime_error naming the
// variable and its value.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm_internal.h"
#include "comm/communicator.h"
#include "comm/slurm_step_id.h"
#include "comm/store_protocol.h"
#include "comm/torchrun_env.h"
#include "src/parse_int.h"

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

std::string quoted(const char* v) { return std::string("'") + (v ? v : "") + "'"; }

class Env {
 public:
  explicit Env(const EnvLookup& get) : get_(get) {}
  const char* raw(const char* name) const { return get_(name); }
  bool has(const char* name) const { return get_(name) != nullptr; }
  std::string str(const char* name, const std::string& fallback = "") const {
    const char* v = get_(name);
    return v ? std::string(v) : fallback;
  }
  // Strict decimal int: optional '-', digits only, no spaces, fits in int.
  int integer(const char* name) const {
    const char* v = get_(name);
    if (!v) fail(std::string(name) + " is not set");
    long long x = 0;
    const IntText t = parse_decimal(v, IntSign::kMinus, INT_MIN, INT_MAX, &x);
    if (t == IntText::kOutOfRange) fail(std::string(name) + "=" + quoted(v) + " is out of range for an int");
    if (t != IntText::kOk) fail(std::string(name) + "=" + quoted(v) + " is not an integer");
    return static_cast<int>(x);
  }
  int integer_or(const char* name, int fallback) const { return has(name) ? integer(name) : fallback; }

 private:
  const EnvLookup& get_;
};

std::string name_val(const char* name, int v) { return std::string(name) + "=" + std::to_string(v); }

void check_size(const char* name, int size) {
  if (size < 1) fail(name_val(name, size) + " must be >= 1");
}
// 0 <= value < bound, where bound came from bound_name.
void check_index(const char* name, int v, const char* bound_name, int bound) {
  if (v < 0 || v >= bound)
    fail(name_val(name, v) + " is out of range: need 0 <= " + name + " < " + bound_name + " (" + std::to_string(bound) +
         ")");
}
void check_at_most(const char* name, int v, const char* bound_name, int bound) {
  if (v > bound) fail(name_val(name, v) + " is larger than " + bound_name + "=" + std::to_string(bound));
}
// Both of a pair of variables, or neither.
bool pair_present(const Env& env, const char* a, const char* b) {
  bool ha = env.has(a), hb = env.has(b);
  if (ha != hb) fail(std::string(ha ? a : b) + " is set but " + (ha ? b : a) + " is not");
  return ha;
}

// A group inside the world (a host's ranks, or the ranks sharing a local rank): reads size_var
// (1..world) and rank_var (0..size-1), failing with the variable's name on a bad value.
void read_group(const Env& env, const char* rank_var, const char* size_var, const char* world_var, int world, int* rank,
                int* size) {
  *size = env.integer(size_var);
  check_size(size_var, *size);
  check_at_most(size_var, *size, world_var, world);
  *rank = env.integer(rank_var);
  check_index(rank_var, *rank, size_var, *size);
}

std::string local_hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string backend_pref(const Env& env, const std::string& fallback) {
  if (!env.has("BARESGD_COMM")) return fallback;
  std::string v = env.str("BARESGD_COMM");
  if (v != "gloo" && v != "mpi" && v != "single")
    fail("BARESGD_COMM=" + quoted(v.c_str()) + " is not one of gloo, mpi, single");
  return v;
}

// "host:port" (host may be "[v6]"); port 1..65535.
void check_store_addr(const std::string& addr) {
  size_t colon = addr.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < addr.size();
  if (ok) {
    std::string port = addr.substr(colon + 1);
    for (char c : port) ok = ok && c >= '0' && c <= '9';
    ok = ok && port.size() <= 5 && std::atoi(port.c_str()) >= 1 && std::atoi(port.c_str()) <= 65535;
  }
  if (!ok) fail("BARESGD_STORE_ADDR=" + quoted(addr.c_str()) + " is not host:port (port 1..65535)");
}

// Slurm's compressed per-node task counts: "2(x3),1" -> {2,2,2,1}. Empty vector if malformed.
std::vector<int> parse_tasks_per_node(const std::string& s) {
  std::vector<int> out;
  size_t i = 0;
  auto number = [&](long* v) {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start || i - start > 9) return false;
    *v = std::strtol(s.substr(start, i - start).c_str(), nullptr, 10);
    return true;
  };
  while (i < s.size()) {
    long count = 0, reps = 1;
    if (!number(&count)) return {};
    if (i < s.size() && s[i] == '(') {
      if (s.compare(i, 2, "(x") != 0) return {};
      i += 2;
      if (!number(&reps) || i >= s.size() || s[i] != ')') return {};
      ++i;
    }
    if (reps < 1 || reps > 1000000 || out.size() + reps > 1000000) return {};
    out.insert(out.end(), static_cast<size_t>(reps), static_cast<int>(count));
    if (i < s.size()) {
      if (s[i] != ',') return {};
      ++i;
      if (i == s.size()) return {};
    }
  }
  return out;
}

[[maybe_unused]] bool pmi_present(const Env& env) {
  return env.has("PMIX_RANK") || env.has("PMIX_NAMESPACE") || env.has("PMI_RANK") || env.has("PMI_FD") ||
         env.has("PMI_SIZE");
}

void from_launcher(const Env& env, RankInfo* r) {
  r->source = "launch";
  if (!env.has("BARESGD_RANK")) fail("BARESGD_SIZE is set but BARESGD_RANK is not");
  if (!env.has("BARESGD_SIZE")) fail("BARESGD_RANK is set but BARESGD_SIZE is not");
  r->size = env.integer("BARESGD_SIZE");
  check_size("BARESGD_SIZE", r->size);
  r->rank = env.integer("BARESGD_RANK");
  check_index("BARESGD_RANK", r->rank, "BARESGD_SIZE", r->size);
  if (pair_present(env, "BARESGD_LOCAL_RANK", "BARESGD_LOCAL_SIZE")) {
    read_group(env, "BARESGD_LOCAL_RANK", "BARESGD_LOCAL_SIZE", "BARESGD_SIZE", r->size, &r->local_rank,
               &r->local_size);
  } else {  // one host
    r->local_rank = r->rank;
    r->local_size = r->size;
  }
  if (pair_present(env, "BARESGD_CROSS_RANK", "BARESGD_CROSS_SIZE")) {
    read_group(env, "BARESGD_CROSS_RANK", "BARESGD_CROSS_SIZE", "BARESGD_SIZE", r->size, &r->cross_rank,
               &r->cross_size);
  } else if (r->local_size == r->size) {
    r->cross_rank = 0;
    r->cross_size = 1;
  } else {
    r->cross_rank = r->cross_size = -1;  // computed after connecting
  }
  r->backend = backend_pref(env, "gloo");
}

// Open MPI's job: its job id, and a digest of the random key mpirun hands every rank of one job
// (OMPI_MCA_orte_precondition_transports): an id all ranks share that no other user can predict,
// so nobody can plant files for it in a --rendezvous-dir ahead of the job. The key itself is never
// shown (the id appears in error lines).
std::string open_mpi_job_id(const Env& env) {
  std::string id = "ompi-" + env.str("OMPI_MCA_ess_base_jobid", "0");
  const std::string key = env.str("OMPI_MCA_orte_precondition_transports");
  if (!key.empty()) id += "-" + to_hex(sha256("baresgd job id " + key)).substr(0, 16);
  return id;
}

void from_open_mpi(const Env& env, RankInfo* r) {
  r->source = "ompi";
  if (!env.has("OMPI_COMM_WORLD_SIZE")) fail("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  r->size = env.integer("OMPI_COMM_WORLD_SIZE");
  check_size("OMPI_COMM_WORLD_SIZE", r->size);
  r->rank = env.integer("OMPI_COMM_WORLD_RANK");
  check_index("OMPI_COMM_WORLD_RANK", r->rank, "OMPI_COMM_WORLD_SIZE", r->size);
  if (!pair_present(env, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"))
    fail(
        "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE are not "
        "(start the ranks with Open MPI's mpirun)");
  read_group(env, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE", r->size,
             &r->local_rank, &r->local_size);
  if (r->local_size == r->size) {
    r->cross_rank = 0;
    r->cross_size = 1;
  } else {
    r->cross_rank = r->cross_size = -1;  // computed after MPI init (split by local rank)
  }
  r->backend = backend_pref(env, "mpi");
  if (!env.has("BARESGD_JOB_ID")) r->job_id = open_mpi_job_id(env);
}

// True when SLURM_PROCID comes from a step that is not a task of an srun step: the batch script
// (or the extern or interactive step). Ordinary step ids are 0 .. 0xffffffef.
bool slurm_non_task_step(const Env& env, std::string* step_var) {
  *step_var = env.has("SLURM_STEP_ID") ? "SLURM_STEP_ID" : env.has("SLURM_STEPID") ? "SLURM_STEPID" : "";
  if (step_var->empty()) return true;
  const std::string v = env.str(step_var->c_str());
  const SlurmStepKind kind = slurm_step_kind(v.c_str());
  if (kind == SlurmStepKind::kMalformed) fail(*step_var + "=" + quoted(v.c_str()) + " is not a step id");
  return kind != SlurmStepKind::kSrunTask;
}

// The batch step of an sbatch job: world size 1, never rank 0 of the allocation's tasks.
void from_slurm_batch(const Env& env, const std::string& step_var, RankInfo* r) {
  r->source = "slurm-batch";
  r->backend = "single";
  const std::string ntasks = env.str("SLURM_NTASKS", "1");
  if (ntasks == "1") return;
  r->notice = "SLURM_PROCID=" + env.str("SLURM_PROCID") + " is from the batch step of Slurm job " +
              env.str("SLURM_JOB_ID", "?") + " (" +
              (step_var.empty() ? std::string("no SLURM_STEP_ID") : step_var + "=" + env.str(step_var.c_str())) +
              "), not from srun: running as a single process (world size 1), not as rank " + env.str("SLURM_PROCID") +
              " of SLURM_NTASKS=" + ntasks + "; start the ranks with srun or ./launch";
}

// Local size and cross rank/size from the tasks-per-node list when it describes this step
// (tasks in blocks), else from an even split of the tasks over the nodes.
void slurm_node_layout(const Env& env, const char* ntasks_var, const char* nnodes_var, int nnodes, int node_id,
                       const char* tpn_var, RankInfo* r) {
  std::vector<int> per_node = parse_tasks_per_node(env.str(tpn_var));
  long total = 0;
  for (int c : per_node) total += c;
  if (env.has(tpn_var) && (per_node.size() != static_cast<size_t>(nnodes) || total != r->size))
    per_node.clear();  // a different layout than this step's: fall back below
  if (!per_node.empty()) {
    r->local_size = per_node[node_id];
    r->cross_size = r->cross_rank = 0;
    for (int n = 0; n < nnodes; ++n) {
      if (per_node[n] > r->local_rank) {
        if (n < node_id) ++r->cross_rank;
        ++r->cross_size;
      }
    }
    return;
  }
  if (r->size % nnodes != 0)
    fail(std::string("cannot tell how many tasks run on this node: ") + tpn_var + "=" + quoted(env.raw(tpn_var)) +
         " does not match " + name_val(ntasks_var, r->size) + " over " + name_val(nnodes_var, nnodes));
  r->local_size = r->size / nnodes;
  r->cross_rank = node_id;
  r->cross_size = nnodes;
}

// The backend, job id and the step's Slurm names (rank 0's MUNGE store needs them).
void slurm_step_identity(const Env& env, const char* tpn_var, RankInfo* r) {
#if BARESGD_HAVE_MPI
  const bool mpi_ok = pmi_present(env);
#else
  const bool mpi_ok = false;
#endif
  r->backend = backend_pref(env, mpi_ok ? "mpi" : "gloo");
  if (!env.has("BARESGD_JOB_ID"))
    r->job_id = "slurm-" + env.str("SLURM_JOB_ID", "0") + "." + env.str("SLURM_STEP_ID", env.str("SLURM_STEPID", "0"));
  r->slurm_job = env.str("SLURM_JOB_ID", env.str("SLURM_JOBID"));
  r->slurm_step = env.str("SLURM_STEP_ID", env.str("SLURM_STEPID"));
  r->slurm_nodelist = env.str("SLURM_STEP_NODELIST", env.str("SLURM_JOB_NODELIST", env.str("SLURM_NODELIST")));
  r->slurm_tasks_per_node = env.str(tpn_var);
  if (!env.has("BARESGD_HOSTNAME") && env.has("SLURMD_NODENAME")) r->hostname = env.str("SLURMD_NODENAME");
}

void from_slurm(const Env& env, RankInfo* r) {
  r->source = "slurm";
  const char* ntasks_var = env.has("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS"
                           : env.has("SLURM_NTASKS")       ? "SLURM_NTASKS"
                                                           : "SLURM_NPROCS";
  if (!env.has(ntasks_var)) fail("SLURM_PROCID is set but SLURM_NTASKS is not");
  r->size = env.integer(ntasks_var);
  check_size(ntasks_var, r->size);
  r->rank = env.integer("SLURM_PROCID");
  check_index("SLURM_PROCID", r->rank, ntasks_var, r->size);
  if (!env.has("SLURM_LOCALID")) fail("SLURM_PROCID is set but SLURM_LOCALID is not (start the ranks with srun)");
  r->local_rank = env.integer("SLURM_LOCALID");
  const char* nnodes_var = env.has("SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES"
                           : env.has("SLURM_NNODES")       ? "SLURM_NNODES"
                                                           : "SLURM_JOB_NUM_NODES";
  int nnodes = env.integer_or(nnodes_var, 1);
  check_size(nnodes_var, nnodes);
  check_at_most(nnodes_var, nnodes, ntasks_var, r->size);
  int node_id = env.integer_or("SLURM_NODEID", 0);
  check_index("SLURM_NODEID", node_id, nnodes_var, nnodes);
  const char* tpn_var = env.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  slurm_node_layout(env, ntasks_var, nnodes_var, nnodes, node_id, tpn_var, r);
  check_size("local size", r->local_size);
  check_index("SLURM_LOCALID", r->local_rank, "tasks on this node", r->local_size);
  slurm_step_identity(env, tpn_var, r);
}

}  // namespace

RankInfo discover_rank_info(const EnvLookup& get) {
  Env env(get);
  RankInfo r;
  r.hostname = env.has("BARESGD_HOSTNAME") ? env.str("BARESGD_HOSTNAME") : local_hostname();
  r.host_addr = env.str("BARESGD_HOST_ADDR");
  r.store_addr = env.str("BARESGD_STORE_ADDR");
  if (env.has("BARESGD_STORE_ADDR")) check_store_addr(r.store_addr);
  r.secret = env.str("BARESGD_SECRET");
  r.munge_socket = env.str("BARESGD_MUNGE_SOCKET");
  if (env.has("BARESGD_JOB_ID") && env.str("BARESGD_JOB_ID").empty()) fail("BARESGD_JOB_ID is set but empty");
  r.job_id = env.str("BARESGD_JOB_ID");

  if (env.has("BARESGD_RANK") || env.has("BARESGD_SIZE")) {
    from_launcher(env, &r);
  } else if (env.has("OMPI_COMM_WORLD_RANK")) {
    from_open_mpi(env, &r);
  } else if (torchrun_env_present(get)) {
    read_torchrun_env(get, &r);
    r.backend = backend_pref(env, r.backend);
  } else if (env.has("SLURM_PROCID")) {
    std::string step_var;
    if (slurm_non_task_step(env, &step_var))
      from_slurm_batch(env, step_var, &r);
    else
      from_slurm(env, &r);
  } else {
    r.source = "none";
    r.backend = "single";
  }
  if (r.job_id.empty()) {  // no starter named the job: ranks started by hand (comm/communicator.h)
    r.job_id = kDefaultJobId;
    r.job_id_default = true;
  }
  if (r.backend == "single" && r.size != 1)
    fail("BARESGD_COMM=single but the " + r.source + " environment says the world has " + std::to_string(r.size) +
         " ranks");
  return r;
}

RankInfo discover_rank_info() {
  return discover_rank_info([](const char* name) -> const char* { return std::getenv(name); });
}
