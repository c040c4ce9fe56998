// slurm_step_id: what kind of Slurm step a process runs in, from the SLURM_STEP_ID (or older
// SLURM_STEPID) slurmstepd puts in its environment. Pure. Read by comm/rank_env.cc (is this an
// srun task?) and launcher/slurm_step.cc (is ./launch itself running inside srun?).
#pragma once
#include <string>

enum class SlurmStepKind {
  kNone,      // no step id: not under slurmstepd, or a batch script of a release that sets none
  kSrunTask,  // an ordinary step id (0 .. 0xffffffef): a task of an srun step
  kOther,     // the batch, extern or interactive step: "batch", "extern", "interactive", a
              // negative number or one >= 0xfffffff0 (Slurm's reserved ids, as some releases print them)
  kMalformed  // set but none of the above
};

// The kind step_id (the variable's value, nullptr when unset) names.
SlurmStepKind slurm_step_kind(const char* step_id);
