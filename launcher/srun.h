// srun: the srun command lines that start ./launch's ranks as job steps of the Slurm allocation it
// runs inside — one step per rank, each running `launch --agent` on the rank's node, so that
// scancel, accounting and the step's cgroup see the rank; the agent protocol then runs over srun's
// stdin and stderr exactly as over ssh (agent_protocol.h). Pure: argv only, nothing runs here.
#pragma once
#include <string>
#include <vector>

struct SrunStep {
  std::string srun;  // srun's path
  std::string host;  // the node, as SLURM_JOB_NODELIST names it
  std::string cwd;   // the step's working directory (the launcher's)
  std::string name;  // the step's name in squeue and sacct, e.g. "rank3"
};

// srun --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist=HOST --overlap --kill-on-bad-exit=1
// --unbuffered --quiet --export=ALL --chdir=CWD --job-name=NAME, then command. --overlap: the
// step shares the CPUs and memory the job's other steps hold (the batch step running ./launch,
// the other ranks' steps) instead of waiting for them; --unbuffered: the agent's and the rank's
// bytes come through as written (the launcher splits lines itself); --quiet: srun's own
// informational lines do not mix into the rank's stderr (its errors still do).
std::vector<std::string> srun_step_argv(const SrunStep& s, const std::vector<std::string>& command);

// The one line for srun missing from PATH inside allocation job_id.
std::string srun_missing_message(const std::string& job_id);
