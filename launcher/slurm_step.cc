// slurm_step: refusing to run ./launch as a task of an srun step (see slurm_step.h).
#include "launcher/slurm_step.h"

#include "comm/slurm_step_id.h"
#include "src/parse_int.h"

namespace {

std::string value_of(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

// The step's task count: SLURM_STEP_NUM_TASKS, else SLURM_NTASKS (srun sets it to the step's);
// 0 when neither is a whole number >= 1.
int step_tasks(const EnvMap& env) {
  int n = 0;
  for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}) {
    auto it = env.find(name);
    if (it != env.end()) return parse_decimal_int(it->second, IntSign::kNone, 1, 1 << 30, &n) ? n : 0;
  }
  return 0;
}

const char kInstead[] =
    "run ./launch once, from the batch script or the salloc shell, not under srun (it starts each rank as a job step "
    "itself)";

}  // namespace

std::string srun_step_refusal(const LaunchOptions& o, const EnvMap& env) {
  const std::string step_var = env.count("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID";
  if (!env.count(step_var) || slurm_step_kind(value_of(env, step_var).c_str()) != SlurmStepKind::kSrunTask) return "";
  const std::string job = value_of(env, "SLURM_JOB_ID"), step = job + "." + value_of(env, step_var);
  const int tasks = step_tasks(env);
  if (tasks > 1)
    return "this is task " + value_of(env, "SLURM_PROCID") + " of the " + std::to_string(tasks) +
           " tasks of Slurm step " + step + ": every task would start the whole job; " + kInstead;
  const bool hosts_from_slurm =
      o.hosts.empty() && o.hostfile.empty() && o.elastic.discovery_script.empty() && in_slurm_allocation(env);
  if (!hosts_from_slurm || tasks < 1 || (o.np_given && o.np <= tasks)) return "";
  const std::string what = o.np_given ? "-np " + std::to_string(o.np) + " ranks do not fit in it"
                                      : "without -np the job would run " + std::to_string(tasks) + " rank";
  return "inside Slurm step " + step + " of " + std::to_string(tasks) +
         " task, whose SLURM_NTASKS and SLURM_TASKS_PER_NODE are the step's, not allocation " + job + "'s: " + what +
         "; " + kInstead + ", or give -H or --hostfile";
}
