// run_plan: the facts of one rank's run that are checked before anything is allocated. Every rank
// refuses a configuration Horovod refuses (Adasum on a non-power-of-two world, Adasum with
// predivide), an --allreduce its backend cannot run, a --dump-params directory it cannot write, and
// batch buffers its memory cannot hold, before any collective; each with one line.
#pragma once
#include <string>

#include "comm/allreduce.h"
#include "comm/communicator.h"
#include "src/options.h"
#include "src/thread_policy.h"

struct RunPlan {
  std::string dump;  // this rank's --dump-params file, empty for none (dump_path_of)
  AllreduceAlgorithm algorithm;
  int threads;              // compute threads per rank (ThreadPolicy)
  ThreadRule threads_rule;  // the rule that decided them (the timing line names it)
  int max_batch;            // the samples a batch buffer holds
};

// train_count, test_count: the splits' samples. Throws std::runtime_error or
// std::invalid_argument with the refusal.
RunPlan plan_run(const Options& opts, const ThreadPolicy& threads, int train_count, int test_count,
                 const Communicator& comm);
