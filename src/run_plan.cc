// run_plan: the checks of a rank's run before anything is allocated (see run_plan.h).
#include "src/run_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "src/config_check.h"
#include "src/memory_budget.h"
#include "src/net.h"
#include "src/sampler.h"

namespace {

// Refuses batch buffers this rank's memory cannot hold (their bytes, and the input and label
// buffers, against memory_budget()).
void check_batch_memory(const Options& opts, int max_batch, int threads) {
  const uint64_t need =
      Net::buffer_bytes(max_batch, threads) + uint64_t(max_batch) * (kImagePixels * sizeof(float) + sizeof(int32_t));
  const MemoryBudget have = memory_budget();
  if (need > have.bytes)
    throw std::runtime_error("--batch-size " + std::to_string(opts.batch_size) + " needs " + bytes_text(need) +
                             " of batch buffers on this rank (" + std::to_string(max_batch) + " samples, " +
                             std::to_string(threads) + (threads == 1 ? " compute thread" : " compute threads") +
                             "), more than the " + bytes_text(have.bytes) + " it can have (" + have.what + ")");
}

// Refuses a --dump-params FILE whose directory is missing or not writable (the file itself is
// written at the end; a run must not train for hours and then fail to save it).
void check_dump_path(const std::string& dump) {
  if (dump.empty()) return;
  const size_t slash = dump.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dump.substr(0, slash);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("--dump-params " + dump + ": directory " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error("--dump-params " + dump + ": directory " + dir +
                             " is not writable: " + std::strerror(errno));
}

// --dump-params FILE for this rank: rank 0 writes FILE; a "%r" in FILE makes every rank write its
// own. Empty when this rank writes nothing.
std::string dump_path_of(const std::string& spec, int rank) {
  std::string dump = spec;
  const size_t r_at = dump.find("%r");
  if (r_at != std::string::npos) dump.replace(r_at, 2, std::to_string(rank));
  return rank == 0 || r_at != std::string::npos ? dump : "";
}

}  // namespace

RunPlan plan_run(const Options& opts, const ThreadPolicy& threads, int train_count, int test_count,
                 const Communicator& comm) {
  const int size = comm.size();
  check_training_configuration(opts, size);
  RunPlan plan;
  plan.dump = dump_path_of(opts.dump_params, comm.rank());
  check_dump_path(plan.dump);
  plan.algorithm = parse_allreduce_algorithm(opts.allreduce);
  if (std::string why = allreduce_unsupported_reason(plan.algorithm, comm.backend_name(), size); !why.empty())
    throw std::runtime_error(why);
  plan.threads = threads.compute_threads;  // the net splits each batch across them itself
  plan.threads_rule = threads.rule;
  // Batch buffers hold no more samples than this rank's shard of the data set can fill.
  const int eval_chunk = std::min(opts.test_batch_size, std::max(opts.batch_size, 64));
  const int train_shard = int((int64_t(train_count) + size - 1) / size),
            test_shard = int((int64_t(test_count) + size - 1) / size);
  plan.max_batch = std::max(std::min(opts.batch_size, train_shard), std::min(eval_chunk, test_shard));
  check_batch_memory(opts, plan.max_batch, plan.threads);
  return plan;
}
