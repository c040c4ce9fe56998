// slurm_step: ./launch run by srun, as one task of a job step, instead of from the batch script
// or the salloc shell. Pure: the environment comes in as a map.
//
// srun gives each task of a step the step's own SLURM_NTASKS, SLURM_TASKS_PER_NODE and
// SLURM_NODELIST (and SLURM_STEP_ID, SLURM_STEP_NUM_TASKS); the allocation's SLURM_JOB_NODELIST
// stays. So `srun -n 2 ./launch ...` would start two whole jobs side by side, and
// `salloc -n 2 srun -n 1 ./launch ...` would read a one-task "allocation" and train at world size
// 1. Both are refused with one line saying to run ./launch once, outside srun (it starts each rank
// as a job step itself, launcher/srun.h).
#pragma once
#include <string>

#include "launcher/options.h"
#include "launcher/slurm_allocation.h"

// Empty when ./launch may go on here; else the one line (without "launch: ") why not:
//   - a task of an srun step of more than one task (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, > 1),
//     whatever the flags: every task would start the job;
//   - a task of a one-task step whose hosts would come from Slurm's variables (no -H, --hostfile
//     or --host-discovery-script), without -np or with an -np larger than the step's tasks: those
//     variables describe the step, not the allocation.
// A step is an srun task's when SLURM_STEP_ID (or SLURM_STEPID) is an ordinary step id
// (comm/slurm_step_id.h): the batch script, salloc's shell and its interactive step are not.
std::string srun_step_refusal(const LaunchOptions& o, const EnvMap& env);
