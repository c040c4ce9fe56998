// run_start: rank 0 reads --checkpoint-dir and says what it resumes; every rank receives rank 0's
// start (see run_start.h).
#include "src/run_start.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "src/checkpoint.h"
#include "src/net.h"
#include "src/resume_plan.h"
#include "src/run_id.h"
#include "src/shared_failure.h"
#include "src/timeline.h"

namespace {

// What rank 0 tells every rank first: whether it could use --checkpoint-dir, whether it resumes a
// checkpoint, and that checkpoint's position. On the wire: kWords int64 in the order of the
// fields (to_words / from_words).
struct StartHeader {
  bool ok = true;
  bool resumed = false;
  int64_t epoch = 1, batch = 0, step = 0;
  bool momentum_started = false;
  // 1, or the checkpoint's world size when it holds every rank's own --use-adasum buffer.
  int64_t momentum_buffers = 1;
  int64_t first_sample = 0;  // the resumed epoch's first sample (TrainState::epoch_first_sample)

  static constexpr size_t kWords = 8;
  std::array<int64_t, kWords> to_words() const {
    return {ok, resumed, epoch, batch, step, momentum_started, momentum_buffers, first_sample};
  }
  static StartHeader from_words(const std::array<int64_t, kWords>& w) {
    StartHeader h;
    h.ok = w[0] != 0;
    h.resumed = w[1] != 0;
    h.epoch = w[2];
    h.batch = w[3];
    h.step = w[4];
    h.momentum_started = w[5] != 0;
    h.momentum_buffers = w[6];
    h.first_sample = w[7];
    return h;
  }
};

// The header of a resumed checkpoint.
StartHeader header_of(const TrainState& st) {
  StartHeader h;
  h.resumed = true;
  h.epoch = st.epoch;
  h.batch = st.batch;
  h.step = st.step;
  h.momentum_started = st.momentum_started;
  h.momentum_buffers = st.momentum_buffers;
  h.first_sample = st.epoch_first_sample;
  return h;
}

// Rank 0, --resume: plan_resume over the directory's checkpoints, its notes on stderr. Throws
// its refusal.
ResumePlan choose_resume_checkpoint(const Options& opts, const RunConfig& now, const std::string& new_id) {
  std::vector<std::string> warnings;
  ResumeCandidates found = find_resume_candidates(opts.checkpoint_dir, Net::kNumParams, now, &warnings);
  ResumePlan plan = plan_resume(opts, now, std::move(found), warnings, new_id);
  for (const auto& line : plan.notes) std::fprintf(stderr, "%s\n", line.c_str());
  if (!plan.refusal.empty()) throw std::runtime_error(plan.refusal);
  return plan;
}

// Rank 0: prepares the directory and, with --resume, loads the checkpoint to continue into
// params/momentum (rank 0's buffer)/generator and st (all of it), else takes a new run id. Throws
// naming what is wrong.
StartHeader rank0_prepare(const Options& opts, const RunConfig& now, std::vector<float>* params,
                          std::vector<float>* momentum, TorchGenerator* generator, TrainState* st,
                          std::string* run_id) {
  prepare_checkpoint_dir(opts.checkpoint_dir);
  for (const auto& t : remove_stale_temp_files(opts.checkpoint_dir))
    std::fprintf(stderr, "train: removed %s, a checkpoint an earlier writer did not finish\n", t.c_str());
  const std::string new_id = new_run_id();
  if (opts.resume) {
    ResumePlan plan = choose_resume_checkpoint(opts, now, new_id);
    if (plan.resumed) {
      *st = std::move(plan.state);
      *run_id = plan.run_id;
      *params = st->params;
      momentum->assign(st->momentum.begin(), st->momentum.begin() + std::ptrdiff_t(params->size()));
      *generator = st->generator;
      return header_of(*st);
    }
  }
  *run_id = new_id;
  std::fprintf(stderr, "train: run %s: checkpoints go to %s/ckpt-%s-<step>.bin\n", run_id->c_str(),
               opts.checkpoint_dir.c_str(), run_id->c_str());
  return StartHeader{};
}

}  // namespace

RunStart start_from_rank0(const Options& opts, Communicator& comm, const RunConfig& config, std::vector<float>* params,
                          std::vector<float>* momentum, TorchGenerator* generator) {
  RunStart r;
  // --use-adasum from a checkpoint holding every rank's own buffer: all of them (world x n, rank
  // order, on every rank); empty when every rank starts from rank 0's buffer.
  std::vector<float> rank_momentum;
  if (opts.checkpoint_dir.empty()) {
    if (opts.resume) throw std::runtime_error("--resume needs --checkpoint-dir DIR");
  } else {
    StartHeader header;
    std::string error;
    TrainState st;
    if (comm.rank() == 0) {
      try {
        header = rank0_prepare(opts, config, params, momentum, generator, &st, &r.run_id);
      } catch (const std::exception& e) {
        header.ok = false;
        error = e.what();
      }
    }
    if (!header.ok) print_rank0_error_now(error);
    std::array<int64_t, StartHeader::kWords> words = header.to_words();
    comm.broadcast(words.data(), sizeof words, 0);
    header = StartHeader::from_words(words);
    if (!header.ok)
      throw_shared_failure(comm.rank(), error, "rank 0 could not use --checkpoint-dir " + opts.checkpoint_dir);
    if (header.resumed) {
      r.epoch = int(header.epoch);
      r.batch = size_t(header.batch);
      r.step = uint64_t(header.step);
      r.momentum_started = header.momentum_started;
      r.first_sample = header.first_sample;
      comm.broadcast(generator, sizeof *generator, 0);
      // Without --use-adasum every rank's buffer must be equal: rank 0's, as from a one-buffer checkpoint.
      if (header.momentum_buffers > 1 && opts.use_adasum) {
        rank_momentum = comm.rank() == 0 ? std::move(st.momentum)
                                         : std::vector<float>(size_t(header.momentum_buffers) * params->size());
        comm.broadcast(rank_momentum.data(), rank_momentum.size() * sizeof(float), 0);
      }
    }
  }
  // Horovod's broadcast_parameters and broadcast_optimizer_state from rank 0.
  int64_t t = timeline_traffic_begin();
  comm.broadcast(params->data(), params->size() * sizeof(float), 0);
  timeline_traffic("start-up broadcast: parameters", t, params->size() * sizeof(float));
  t = timeline_traffic_begin();
  comm.broadcast(momentum->data(), momentum->size() * sizeof(float), 0);
  timeline_traffic("start-up broadcast: momentum", t, momentum->size() * sizeof(float));
  if (!rank_momentum.empty()) {
    const auto mine = rank_momentum.begin() + std::ptrdiff_t(size_t(comm.rank()) * momentum->size());
    std::copy(mine, mine + std::ptrdiff_t(momentum->size()), momentum->begin());
  }
  return r;
}
