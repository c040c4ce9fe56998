// resume_plan: which checkpoint --resume continues and where this run starts in it (pure: the
// caller read --checkpoint-dir and drew a run id; src/run_start.cc does that I/O and the
// broadcasts). The newest checkpoint of this run's configuration continues; one of another
// configuration is refused unless --resume-any-config (then it continues as a new run, a batch of
// another --batch-size moved to this size's); one of another world size continues its epoch at
// the first sample it had not trained, dealt over this world. Every decision is said in one line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/checkpoint.h"
#include "src/options.h"
#include "src/run_config.h"

// The configuration this run writes into its checkpoints (run id left empty).
RunConfig run_config_now(const Options& opts, int world, int threads);

struct ResumePlan {
  // The lines for stderr, in order ("train: ..."); printed before a refusal too.
  std::vector<std::string> notes;
  std::string refusal;   // not empty: the one-line error; the run must not start
  bool resumed = false;  // false (and no refusal): no checkpoint, the run starts from the beginning
  // The checkpoint to continue, its position moved to where this run continues it (epoch, batch,
  // epoch_first_sample and world size); its params, momentum and generator as it holds them.
  TrainState state;
  std::string path;    // its file
  std::string run_id;  // the run this one writes checkpoints for (the checkpoint's, or a new one)
};

// --resume's decision over what find_resume_candidates found in opts.checkpoint_dir (warnings:
// the corrupt files it skipped, noted first). new_run_id: the id this run takes when it does not
// continue the checkpoint's run (another configuration, or a checkpoint that records none).
ResumePlan plan_resume(const Options& opts, const RunConfig& now, ResumeCandidates found,
                       const std::vector<std::string>& warnings, const std::string& new_run_id);

// With --resume-any-config from a checkpoint of another --batch-size: the batch of this run's
// size holding the first sample the checkpoint had not trained on yet, rounded up (a partial
// batch's samples are skipped, never trained twice).
int64_t batch_for_new_size(const TrainState& st, int batch_size);
