// slurm_allocation: reading a Slurm allocation from the job's environment (see slurm_allocation.h).
#include "launcher/slurm_allocation.h"

#include <set>

namespace {

const std::string* find(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

[[noreturn]] void fail(const std::string& msg) { throw SlurmListError(msg); }

// SLURM_NTASKS: 1..slots.
int read_ntasks(const std::string& v, int slots, const std::string& tasks_per_node) {
  const std::string named = slurm_quoted("SLURM_NTASKS", v);
  bool digits = !v.empty() && v.size() <= 9;
  for (char c : v) digits = digits && c >= '0' && c <= '9';
  if (!digits) fail(named + ": not a whole number");
  const long n = std::stol(v);
  if (n < 1) fail(named + ": must be >= 1");
  if (n > slots)
    fail(named + ": more than the " + std::to_string(slots) + " tasks of " +
         slurm_quoted("SLURM_TASKS_PER_NODE", tasks_per_node));
  return static_cast<int>(n);
}

}  // namespace

bool in_slurm_allocation(const EnvMap& env) {
  return find(env, "SLURM_JOB_ID") != nullptr && find(env, "SLURM_JOB_NODELIST") != nullptr;
}

SlurmAllocation read_slurm_allocation(const EnvMap& env) {
  SlurmAllocation a;
  a.job_id = *find(env, "SLURM_JOB_ID");
  a.nodelist = *find(env, "SLURM_JOB_NODELIST");
  const std::string* tpn = find(env, "SLURM_TASKS_PER_NODE");
  if (!tpn)
    fail(
        "SLURM_JOB_NODELIST is set but SLURM_TASKS_PER_NODE is not: cannot tell how many tasks each node holds "
        "(pass -H or --hostfile)");
  a.tasks_per_node = *tpn;
  const std::vector<std::string> names = expand_slurm_hostlist(a.nodelist, "SLURM_JOB_NODELIST");
  const std::vector<int> tasks = expand_slurm_tasks_per_node(a.tasks_per_node, "SLURM_TASKS_PER_NODE");
  if (tasks.size() != names.size())
    fail(slurm_quoted("SLURM_TASKS_PER_NODE", a.tasks_per_node) + " lists " + std::to_string(tasks.size()) +
         " nodes but " + slurm_quoted("SLURM_JOB_NODELIST", a.nodelist) + " has " + std::to_string(names.size()));
  std::set<std::string> seen;
  long slots = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    if (!seen.insert(names[k]).second)
      fail(slurm_quoted("SLURM_JOB_NODELIST", a.nodelist) + ": host '" + names[k] + "' is listed twice");
    a.hosts.push_back({names[k], tasks[k]});
    slots += tasks[k];
  }
  if (slots > kSlurmMaxTasksPerNode)  // the most ranks ./launch starts (-np's limit)
    fail(slurm_quoted("SLURM_TASKS_PER_NODE", a.tasks_per_node) + ": " + std::to_string(slots) +
         " tasks in all, more than launch supports (65536)");
  a.slots = static_cast<int>(slots);
  const std::string* ntasks = find(env, "SLURM_NTASKS");
  a.ntasks = ntasks ? read_ntasks(*ntasks, a.slots, a.tasks_per_node) : a.slots;
  return a;
}

EnvMap env_map(const std::vector<std::string>& env) {
  EnvMap out;
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    if (eq != std::string::npos) out.emplace(e.substr(0, eq), e.substr(eq + 1));
  }
  return out;
}
