// run_start: where every rank's training starts, the I/O around src/resume_plan.h's decision.
// Rank 0 prepares --checkpoint-dir and, with --resume, loads the checkpoint plan_resume chose into
// the parameters, its momentum buffer and torch's generator (a run that resumes nothing takes a new
// run id); then Horovod's broadcast of parameters and optimizer state from rank 0, with the
// position and the generator, so every rank starts at the same step with the same draws to come.
//
// --use-adasum: after this broadcast every rank's momentum buffer evolves on its own (Horovod's
// Adasum optimizer never re-synchronises it). So on W > 1 ranks a checkpoint holds every rank's
// buffer (gathered to rank 0 when it is saved) and a resumed run gives each rank its own back,
// which makes a resumed Adasum run equal an uninterrupted one; a checkpoint with one buffer
// (version 2, or written without --use-adasum) starts every rank from rank 0's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/torch_generator.h"
#include "src/options.h"
#include "src/run_config.h"

// The position the run starts at (epoch 1, batch 0, step 0 unless it resumed).
struct RunStart {
  int epoch = 1;
  size_t batch = 0;
  uint64_t step = 0;
  bool momentum_started = false;
  std::string run_id;  // rank 0: the run this one writes checkpoints for
  // The epoch's sample this world size starts it at: the checkpoint's, or where it stopped when
  // the checkpoint was written by another world size (the resumed epoch then starts at batch 0).
  int64_t first_sample = 0;
};

// Every rank, connected: params, momentum (this rank's buffer) and generator become rank 0's,
// from the checkpoint --resume continues or as they are (torch.manual_seed, then Net()). Every
// rank fails when rank 0 could not prepare the directory or the checkpoint does not fit this run
// (rank 0 names the file; "--resume needs --checkpoint-dir DIR" without one).
RunStart start_from_rank0(const Options& opts, Communicator& comm, const RunConfig& config, std::vector<float>* params,
                          std::vector<float>* momentum, TorchGenerator* generator);
