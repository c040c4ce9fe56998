// train: epochs of momentum SGD with Horovod's DistributedOptimizer semantics, and the test pass.
#include "src/train.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/gradient_averaging.h"
#include "comm/overlapped_averaging.h"
#include "kernels/sgd.h"
#include "src/adasum_step.h"
#include "src/checkpoint.h"
#include "src/config_check.h"
#include "src/memory_budget.h"
#include "src/mnist.h"
#include "src/net.h"
#include "src/run_config.h"
#include "src/run_id.h"
#include "src/sample_record.h"
#include "src/sampler.h"
#include "src/shared_failure.h"
#include "src/torch_streams.h"
#include "src/train_hooks.h"
#include "src/timeline.h"

namespace {

constexpr uint64_t kSamplerSeed = 0;  // DistributedSampler's default seed

struct TestResult {
  double loss, accuracy;  // averaged over ranks
};

TestResult evaluate(Net& net, const MnistSplit& test, DistributedSampler& sampler, int test_batch_size,
                    Communicator& comm, std::vector<float>& x, std::vector<int32_t>& y) {
  const auto& idx = sampler.indices();
  double loss_sum = 0, correct = 0;
  const int chunk = net.max_batch();
  // DataLoader batches of test_batch_size; each evaluated in chunks that fit the net's buffers.
  for (size_t start = 0; start < idx.size(); start += size_t(test_batch_size)) {
    const size_t end = std::min(idx.size(), start + size_t(test_batch_size));
    for (size_t s = start; s < end; s += size_t(chunk)) {
      const int n = int(std::min(end - s, size_t(chunk)));
      gather_batch(x.data(), y.data(), test, idx.data() + s, n);
      const float* logp = net.forward(x.data(), n, false);
      for (int b = 0; b < n; ++b) {
        const float* row = logp + b * 10;
        loss_sum -= double(row[y[b]]);
        int best = 0;
        for (int c = 1; c < 10; ++c)
          if (row[c] > row[best]) best = c;
        correct += (best == y[b]);
      }
    }
  }
  double m[2] = {loss_sum / double(sampler.size()), correct / double(sampler.size())};
  comm.allreduce_sum(m, 2);
  return {m[0] / comm.size(), m[1] / comm.size()};
}

// Seconds since this process started (from /proc/self/stat's start time).
double process_seconds() {
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return -1;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return -1;
  unsigned long long start = 0;
  // Fields after the command: state is field 3; starttime is field 22.
  int field = 2;
  for (const char* q = p + 1; *q && field < 22; ++q)
    if (*q == ' ' && ++field == 22) start = std::strtoull(q + 1, nullptr, 10);
  double uptime = 0;
  if (std::FILE* u = std::fopen("/proc/uptime", "r")) {
    if (std::fscanf(u, "%lf", &uptime) != 1) uptime = 0;
    std::fclose(u);
  }
  return uptime - double(start) / double(sysconf(_SC_CLK_TCK));
}

struct Resume {
  int epoch = 1;
  size_t batch = 0;
  uint64_t step = 0;
  bool momentum_started = false;
  // --use-adasum from a checkpoint holding every rank's own buffer: all of them (world x n, rank
  // order, on every rank); empty when every rank starts from rank 0's buffer.
  std::vector<float> rank_momentum;
  std::string run_id;  // rank 0: the run this one writes checkpoints for
  // The epoch's sample this world size starts it at: the checkpoint's, or where it stopped when
  // the checkpoint was written by another world size (the resumed epoch then starts at batch 0).
  int64_t first_sample = 0;
};

// The configuration this run would write into its checkpoints (run id left empty).
RunConfig run_config_now(const Options& opts, int world, int threads) {
  RunConfig c;
  c.world_size = world;
  c.batch_size = opts.batch_size;
  c.seed = opts.seed;
  RunSettings& s = c.settings;
  s.lr = opts.lr;
  s.momentum = opts.momentum;
  s.epochs = opts.epochs;
  s.dropout = !opts.no_dropout;
  s.fp16_allreduce = opts.fp16_allreduce;
  s.predivide = opts.gradient_predivide_factor;
  s.adasum = opts.use_adasum;
  s.allreduce = opts.allreduce;
  s.threads = threads;
  return c;
}

// The refusal of a checkpoint of another configuration, naming the file and each difference.
std::string refusal_of(const std::string& path, const std::vector<SettingChange>& changes, bool any_config) {
  const std::vector<SettingChange::Kind> refused = {SettingChange::kNumbers};
  return "checkpoint " + path + " was written with " + changes_text(changes, true, refused) + ", this run has " +
         changes_text(changes, false, refused) +
         (any_config ? "" : " (resume needs the same configuration; --resume-any-config continues it anyway)");
}

// With --resume-any-config from a checkpoint of another --batch-size: the batch of this run's
// size holding the first sample the checkpoint had not trained on yet, rounded up (a partial
// batch's samples are skipped, never trained twice).
int64_t batch_for_new_size(const TrainState& st, int batch_size) {
  const int64_t done = st.batch * int64_t(st.batch_size);
  return (done + batch_size - 1) / batch_size;
}

// A checkpoint of another world size (an elastic restart): its epoch continues at the first sample
// it had not trained, dealt over this world (DistributedSampler::set_epoch's first_sample), from
// batch 0; said in one line with the learning rate the example scales by the world size.
void continue_at_sample(const Options& opts, const RunConfig& now, TrainState* st) {
  const int64_t sample = st->epoch_first_sample + st->batch * int64_t(st->batch_size) * st->world_size;
  const double lr = opts.use_adasum ? opts.lr : opts.lr * now.world_size;
  std::fprintf(stderr,
               "train: continuing epoch %d at sample %lld on %d ranks (the checkpoint was written by %d): the "
               "epoch's remaining samples are dealt over this world; lr %g (%s)\n",
               st->epoch, (long long)sample, now.world_size, st->world_size, lr,
               opts.use_adasum ? "--use-adasum: not scaled" : ("--lr x " + std::to_string(now.world_size)).c_str());
  st->epoch_first_sample = sample;
  st->batch = 0;
  st->world_size = now.world_size;
}

// Refuses a checkpoint holding every rank's own --use-adasum momentum on another world size.
void check_momentum_buffers(const TrainState& st, const std::string& path, const RunConfig& now) {
  if (st.world_size != now.world_size && st.momentum_buffers > 1)
    throw std::runtime_error("checkpoint " + path + " holds each of its " + std::to_string(st.world_size) +
                             " ranks' own --use-adasum momentum; it cannot continue on " +
                             std::to_string(now.world_size) + (now.world_size == 1 ? " rank" : " ranks") +
                             " (Adasum keeps one momentum buffer per rank)");
}

// The one-line notes of a resume: where it continues, the harmless differences, and for a
// checkpoint before version 4 (no run id, no settings) what could not be compared.
void note_resume(const TrainState& st, const std::string& path, const std::vector<SettingChange>& changes,
                 const std::string& run_id) {
  std::fprintf(stderr, "train: resuming from %s (epoch %d, batch %lld, step %lld), run %s\n", path.c_str(), st.epoch,
               (long long)st.batch, (long long)st.step, st.run_id.empty() ? "unknown" : st.run_id.c_str());
  const std::string harmless = changes_text(changes, true, {SettingChange::kHarmless});
  if (!harmless.empty())
    std::fprintf(stderr, "train: it was written with %s, this run has %s (the steps compute the same numbers%s)\n",
                 harmless.c_str(), changes_text(changes, false, {SettingChange::kHarmless}).c_str(),
                 harmless.find("--threads") != std::string::npos ? ", up to float rounding" : "");
  if (st.run_id.empty())
    std::fprintf(stderr,
                 "train: %s is a version %d checkpoint: it records no run id and no --lr, --momentum, "
                 "dropout or averaging options (only world size, --batch-size and --seed were compared); "
                 "this run continues as run %s\n",
                 path.c_str(), st.version, run_id.c_str());
}

// --resume-any-config continuing a checkpoint of another configuration as a new run: a batch of
// another --batch-size moves to this size's batch (batch_for_new_size), said in one line.
void continue_other_config(const std::string& path, const std::vector<SettingChange>& changes, const RunConfig& now,
                           const std::string& run_id, TrainState* st) {
  std::string moved;
  if (st->batch_size != now.batch_size && st->batch > 0) {
    const int64_t b = batch_for_new_size(*st, now.batch_size);
    moved = "; batch " + std::to_string(st->batch) + " of --batch-size " + std::to_string(st->batch_size) +
            " continues at batch " + std::to_string(b) + " of --batch-size " + std::to_string(now.batch_size);
    st->batch = b;
  }
  std::fprintf(stderr, "train: --resume-any-config: continuing %s with %s instead of %s as new run %s%s\n",
               path.c_str(), changes_text(changes, false, {SettingChange::kNumbers}).c_str(),
               changes_text(changes, true, {SettingChange::kNumbers}).c_str(), run_id.c_str(), moved.c_str());
}

// Rank 0, --resume: the checkpoint to continue (false: none), its one-line notes on stderr.
// Throws naming the file when the newest valid checkpoint belongs to another configuration
// (unless --resume-any-config, which continues it as a new run; never another world size).
bool choose_resume_checkpoint(const Options& opts, const RunConfig& now, TrainState* st, std::string* path,
                              std::string* run_id) {
  std::vector<std::string> warnings;
  ResumeCandidates c = find_resume_candidates(opts.checkpoint_dir, Net::kNumParams, now, &warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "train: warning: %s\n", w.c_str());
  if (!c.have_match && !c.have_other) {
    std::fprintf(stderr, "train: no checkpoint in %s; starting from the beginning\n", opts.checkpoint_dir.c_str());
    return false;
  }
  if (c.have_match && c.have_other) {
    const auto changes = run_config_changes(run_config_of(c.other), c.other.has_settings, now);
    std::fprintf(stderr, "train: not resuming from the newer %s: it was written with %s, this run has %s\n",
                 c.other_path.c_str(), changes_text(changes, true, {SettingChange::kNumbers}).c_str(),
                 changes_text(changes, false, {SettingChange::kNumbers}).c_str());
  }
  const bool other = !c.have_match;
  *st = std::move(other ? c.other : c.match);
  *path = other ? c.other_path : c.match_path;
  const auto changes = run_config_changes(run_config_of(*st), st->has_settings, now);
  if (other && !opts.resume_any_config) throw std::runtime_error(refusal_of(*path, changes, false));
  check_momentum_buffers(*st, *path, now);
  // A changed configuration is a new run (its files never prune the run it came from).
  *run_id = other || st->run_id.empty() ? new_run_id() : st->run_id;
  note_resume(*st, *path, changes, *run_id);
  if (st->world_size != now.world_size) continue_at_sample(opts, now, st);
  if (other) continue_other_config(*path, changes, now, *run_id, st);
  return true;
}

// What rank 0 tells every rank first (prepare_checkpoints): whether it could use --checkpoint-dir,
// whether it resumes a checkpoint, and that checkpoint's position. On the wire: kWords int64 in
// the order of the fields (to_words / from_words).
struct StartHeader {
  bool ok = true;
  bool resumed = false;
  int64_t epoch = 1, batch = 0, step = 0;
  bool momentum_started = false;
  // 1, or the checkpoint's world size when it holds every rank's own --use-adasum buffer
  // (decode_checkpoint, choose_resume_checkpoint).
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

// Rank 0's part of prepare_checkpoints: prepares the directory and, with --resume, loads the
// checkpoint to continue into params/momentum (rank 0's buffer)/generator and st (all of it),
// else takes a new run id. Throws naming what is wrong.
StartHeader rank0_prepare(const Options& opts, const RunConfig& now, std::vector<float>* params,
                          std::vector<float>* momentum, TorchGenerator* generator, TrainState* st,
                          std::string* run_id) {
  prepare_checkpoint_dir(opts.checkpoint_dir);
  for (const auto& t : remove_stale_temp_files(opts.checkpoint_dir))
    std::fprintf(stderr, "train: removed %s, a checkpoint an earlier writer did not finish\n", t.c_str());
  std::string path;
  if (opts.resume && choose_resume_checkpoint(opts, now, st, &path, run_id)) {
    *params = st->params;
    momentum->assign(st->momentum.begin(), st->momentum.begin() + std::ptrdiff_t(params->size()));
    *generator = st->generator;
    return header_of(*st);
  }
  *run_id = new_run_id();
  std::fprintf(stderr, "train: run %s: checkpoints go to %s/ckpt-%s-<step>.bin\n", run_id->c_str(),
               opts.checkpoint_dir.c_str(), run_id->c_str());
  return StartHeader{};
}

// Rank 0 checks --checkpoint-dir and, with --resume, loads the checkpoint to continue
// (choose_resume_checkpoint) into params/momentum (rank 0's buffer)/generator; the position and
// the generator are broadcast so every rank starts at the same step with the same draws to come,
// and with --use-adasum every rank's own momentum buffer when the checkpoint holds them. Every
// rank fails when rank 0 could not prepare the directory or the checkpoint does not fit this run
// (rank 0 names the file). A run that resumes nothing takes a new run id.
Resume prepare_checkpoints(const Options& opts, Communicator& comm, const RunConfig& now, std::vector<float>* params,
                           std::vector<float>* momentum, TorchGenerator* generator) {
  Resume r;
  if (opts.checkpoint_dir.empty()) {
    if (opts.resume) throw std::runtime_error("--resume needs --checkpoint-dir DIR");
    return r;
  }
  StartHeader header;
  std::string error;
  TrainState st;
  if (comm.rank() == 0) {
    try {
      header = rank0_prepare(opts, now, params, momentum, generator, &st, &r.run_id);
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
      r.rank_momentum = comm.rank() == 0 ? std::move(st.momentum)
                                         : std::vector<float>(size_t(header.momentum_buffers) * params->size());
      comm.broadcast(r.rank_momentum.data(), r.rank_momentum.size() * sizeof(float), 0);
    }
  }
  return r;
}

// Refuses, before anything is allocated, batch buffers this rank's memory cannot hold (their
// bytes, and the input and label buffers, against memory_budget()).
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

// --dump-params FILE for this rank: rank 0 writes FILE; a "%r" in FILE makes every rank write its
// own. Empty when this rank writes nothing.
std::string dump_path_of(const std::string& spec, int rank) {
  std::string dump = spec;
  const size_t r_at = dump.find("%r");
  if (r_at != std::string::npos) dump.replace(r_at, 2, std::to_string(rank));
  return rank == 0 || r_at != std::string::npos ? dump : "";
}

// Refuses, before training, a --dump-params FILE whose directory is missing or not writable (the
// file itself is written at the end; a run must not train for hours and then fail to save it).
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

// Net's backward order (layer 3 = fc2 first) as the overlapped averaging's layer list.
std::vector<Segment> backward_layers() {
  std::vector<Segment> layers;
  for (int layer = Net::kNumLayers - 1; layer >= 0; --layer) {
    const ParamView &w = Net::kParams[2 * layer], &b = Net::kParams[2 * layer + 1];
    layers.push_back({w.offset, w.count + b.count});
  }
  return layers;
}

// The overlapped averaging's buckets by their layers in backward order, "fc2+fc1", "conv2",
// "conv1" (the timeline's bucket track names); none without the overlapped averaging.
std::vector<std::string> bucket_layers(const OverlappedAveraging* averaging) {
  static const char* const kBackwardNames[Net::kNumLayers] = {"fc2", "fc1", "conv2", "conv1"};
  std::vector<std::string> out;
  if (!averaging) return out;
  for (const GradientBucket& b : averaging->buckets()) {
    std::string name;
    for (int i = b.first_layer; i <= b.after_layer; ++i)
      name += (name.empty() ? "" : "+") + std::string(kBackwardNames[i]);
    out.push_back(name);
  }
  return out;
}

// Tells the overlapped averaging which of backward_layers() Net's backward has finished.
struct BucketStarter : BackwardListener {
  OverlappedAveraging* averaging = nullptr;
  void layer_done(int layer) override { averaging->layer_done(Net::kNumLayers - 1 - layer); }
};

// Reads a training batch's samples into the batch buffers for Net::forward, slice by slice
// (gather_batch over each slice's rows, on the thread that runs the slice). The step's data time
// ends when slice 0, always on the calling thread, has read its share.
struct BatchReader : SliceInput {
  const MnistSplit* split = nullptr;
  const uint32_t* idx = nullptr;  // the batch's sample indices
  float* x = nullptr;
  int32_t* y = nullptr;
  TrainHooks* hooks = nullptr;
  void read(int begin, int end) override {
    if (begin == 0) hooks->data_begin();
    gather_batch(x + size_t(begin) * kImagePixels, y + begin, *split, idx + begin, end - begin);
    if (begin == 0) hooks->data_done();
  }
};

// The facts of this rank's run that are checked before anything is allocated: every rank refuses
// a configuration Horovod refuses (Adasum on a non-power-of-two world, Adasum with predivide), an
// --allreduce its backend cannot run, a --dump-params directory it cannot write, and batch buffers
// its memory cannot hold, before any collective.
struct RunPlan {
  std::string dump;  // this rank's --dump-params file, empty for none (dump_path_of)
  AllreduceAlgorithm algorithm;
  int threads;              // compute threads per rank (ThreadPolicy)
  ThreadRule threads_rule;  // the rule that decided them (the timing line names it)
  int max_batch;            // the samples a batch buffer holds
};

RunPlan plan_run(const Options& opts, const ThreadPolicy& threads, const TrainData& data, const Communicator& comm) {
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
  const int train_shard = int((int64_t(data.train.count) + size - 1) / size),
            test_shard = int((int64_t(data.test.count) + size - 1) / size);
  plan.max_batch = std::max(std::min(opts.batch_size, train_shard), std::min(eval_chunk, test_shard));
  check_batch_memory(opts, plan.max_batch, plan.threads);
  return plan;
}

// torch.manual_seed(args.seed) on every rank, then model = Net().
TorchStreams seeded_streams(int seed, Net* net) {
  TorchStreams s;
  s.seed(uint64_t(seed));
  s.init_net(net);
  return s;
}

// --checkpoint-dir / --resume (prepare_checkpoints), then Horovod's broadcast of the parameters
// and optimizer state from rank 0.
// --use-adasum: after this broadcast every rank's momentum buffer evolves on its own (Horovod's
// Adasum optimizer never re-synchronises it). So on W > 1 ranks a checkpoint holds every rank's
// buffer (gathered to rank 0 when it is saved) and a resumed run gives each rank its own back,
// which makes a resumed Adasum run equal an uninterrupted one; a checkpoint with one buffer
// (version 2, or written without --use-adasum) starts every rank from rank 0's.
Resume start_from_rank0(const Options& opts, Communicator& comm, const RunConfig& config, Net* net,
                        std::vector<float>* momentum, TorchGenerator* generator) {
  Resume start = prepare_checkpoints(opts, comm, config, &net->params, momentum, generator);
  comm.broadcast(net->params.data(), net->params.size() * sizeof(float), 0);
  comm.broadcast(momentum->data(), momentum->size() * sizeof(float), 0);
  if (!start.rank_momentum.empty()) {
    const auto mine = start.rank_momentum.begin() + std::ptrdiff_t(size_t(comm.rank()) * momentum->size());
    std::copy(mine, mine + std::ptrdiff_t(momentum->size()), momentum->begin());
    start.rank_momentum = {};
  }
  return start;
}

GradientAveraging averaging_of(const Options& opts, AllreduceAlgorithm algorithm) {
  GradientAveraging how;
  how.predivide_factor = opts.gradient_predivide_factor;
  how.fp16 = opts.fp16_allreduce;
  how.adasum = opts.use_adasum;
  how.algorithm = algorithm;
  return how;
}

// Horovod: the learning rate scaled by the number of ranks (not with Adasum on CPU).
double scaled_lr(const Options& opts, int size) { return opts.use_adasum ? opts.lr : opts.lr * size; }

RunFacts run_facts(const Options& opts, int size, const GradientAveraging& how) {
  RunFacts facts;
  facts.lr = scaled_lr(opts, size);
  facts.elem_bytes = how.fp16 ? 2 : 4;
  facts.algorithm = allreduce_algorithm_name(how.algorithm);
  return facts;
}

// Each parameter tensor of the net as a segment of the flat buffer.
std::vector<Segment> param_segments() {
  std::vector<Segment> segments;
  for (const ParamView& p : Net::kParams) segments.push_back({p.offset, p.count});
  return segments;
}

// --overlap on: each bucket's exchange starts inside backward, finish() ends it before the step;
// where it could not give the whole-buffer call's bits (overlap_refusal), none (the whole buffer).
std::unique_ptr<OverlappedAveraging> overlapped_of(const Options& opts, Communicator& comm, Net& net,
                                                   const GradientAveraging& how) {
  if (!opts.overlap || !overlap_refusal(comm, how, Net::kNumParams).empty()) return nullptr;
  return std::make_unique<OverlappedAveraging>(comm, net.grads.data(), backward_layers(), how);
}

// --dump-params FILE (dump_path_of: this rank's file, checked at the start).
void dump_params(const std::string& dump, const std::vector<float>& params) {
  if (dump.empty()) return;
  std::FILE* f = std::fopen(dump.c_str(), "wb");
  if (!f) throw std::runtime_error(dump + ": cannot write: " + std::strerror(errno));
  size_t w = std::fwrite(params.data(), sizeof(float), params.size(), f);
  if (std::fclose(f) != 0 || w != params.size())
    throw std::runtime_error(dump + ": write failed: " + std::strerror(errno));
}

// BARESGD_TIMING=1: one machine-readable line per rank on stderr at the end (bench/; tests read
// overlap_buckets, the number of buckets the overlapped averaging ran, 0 for the whole buffer, and
// lane_rounds, the exchanges moved on Gloo's sync lane, and threads, the rank's compute threads, then
// in parentheses the rule that decided them: src/thread_policy.h thread_rule_name).
struct Timing {
  using Clock = std::chrono::steady_clock;
  bool enabled = false;
  double train_s = 0, test_s = 0, startup_s = -1, comm_s = 0;
  static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
};

bool timing_enabled() {
  const char* timing_env = std::getenv("BARESGD_TIMING");
  return timing_env && std::string(timing_env) == "1";
}

// One rank's whole run: the set-up in the constructor (in this order: checks, net, start state,
// averaging, hooks, samplers), then run(): the epochs (train steps, then the test pass), then the end.
class Trainer {
 public:
  Trainer(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm, std::FILE* out);
  void run();

 private:
  using Clock = Timing::Clock;
  bool train_epoch(int epoch);  // false: --max-steps stopped it
  void train_step(int epoch, size_t b, size_t batches, int64_t first_sample);
  void average_gradients_now();
  void adasum_update(float lr);
  void test_pass(int epoch);
  void save(int epoch, int64_t first_sample, size_t next_batch, uint64_t steps);
  void finish();

  const Options& opts_;
  const MnistSplit& train_;
  const MnistSplit& test_;
  Communicator& comm_;
  std::FILE* out_;
  const int rank_, size_;
  const RunPlan plan_;
  Net net_;
  TorchStreams torch_rng_;
  std::vector<float> momentum_;
  const RunConfig config_;
  const Resume start_;
  bool momentum_started_;
  const bool rank_momentum_;  // --use-adasum on W > 1 ranks: every rank's own buffer is saved
  const float lr_;
  GradientAveraging how_;
  const std::vector<Segment> segments_;
  TrainHooks hooks_;  // --metrics, --inspect, --check-sync, the summary
  std::unique_ptr<OverlappedAveraging> overlapped_;
  BucketStarter bucket_starter_;
  DistributedSampler train_sampler_, test_sampler_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
  uint64_t step_;
  std::unique_ptr<SampleRecord> record_;  // --sample-record: rank 0 writes every rank's samples
  Timing timing_;
};

Trainer::Trainer(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm, std::FILE* out)
    : opts_(opts),
      train_(data.train),
      test_(data.test),
      comm_(comm),
      out_(out),
      rank_(comm.rank()),
      size_(comm.size()),
      plan_(plan_run(opts, threads, data, comm)),
      net_(plan_.max_batch, plan_.threads),
      torch_rng_(seeded_streams(opts.seed, &net_)),
      momentum_(Net::kNumParams, 0.0f),
      config_(run_config_now(opts, size_, net_.threads())),
      start_(start_from_rank0(opts, comm, config_, &net_, &momentum_, &torch_rng_.gen)),
      momentum_started_(start_.momentum_started),
      rank_momentum_(opts.use_adasum && size_ > 1),
      lr_(float(scaled_lr(opts, size_))),
      how_(averaging_of(opts, plan_.algorithm)),
      segments_(param_segments()),
      hooks_(opts, comm, run_facts(opts, size_, how_)),
      overlapped_(overlapped_of(opts, comm, net_, how_)),
      train_sampler_(size_t(train_.count), size_, rank_, true, kSamplerSeed),
      test_sampler_(size_t(test_.count), size_, rank_, true, kSamplerSeed),
      x_(size_t(net_.max_batch()) * kImagePixels),
      y_(size_t(net_.max_batch())),
      step_(start_.step) {
  bucket_starter_.averaging = overlapped_.get();
  if (rank_ == 0 && !opts.sample_record.empty()) record_ = std::make_unique<SampleRecord>(opts.sample_record, step_);
  // --timeline: clocks synced to rank 0's, tracks named, each bucket's exchange on its own track
  timeline_start(comm, net_.threads(), how_, bucket_layers(overlapped_.get()));
  if (overlapped_) overlapped_->set_observer(timeline_overlap_observer());
  timing_.enabled = timing_enabled();
}

void Trainer::run() {
  for (int epoch = start_.epoch; epoch <= opts_.epochs; ++epoch) {
    if (!train_epoch(epoch)) break;
    test_pass(epoch);
  }
  finish();
}

// The epoch's train steps from where the run starts it; false when --max-steps stopped it.
bool Trainer::train_epoch(int epoch) {
  const auto t_epoch = Clock::now();
  if (timing_.startup_s < 0) timing_.startup_s = process_seconds();
  // A resumed epoch may have been begun by another world size: this one deals out its rest.
  const int64_t first_sample = epoch == start_.epoch ? start_.first_sample : 0;
  train_sampler_.set_epoch(uint64_t(epoch), size_t(first_sample));
  const size_t batches = num_batches(train_sampler_.size(), size_t(opts_.batch_size));
  if (record_) record_->begin_epoch(size_t(train_.count), size_, uint64_t(epoch), size_t(first_sample));
  const size_t first_batch = epoch == start_.epoch ? start_.batch : 0;
  if (first_batch == 0 && first_sample == 0) torch_rng_.start_train_loader();  // a resumed epoch drew it already
  bool stopped = false;
  for (size_t b = first_batch; b < batches; ++b) {
    if (opts_.max_steps >= 0 && step_ >= uint64_t(opts_.max_steps)) {
      stopped = true;
      break;
    }
    train_step(epoch, b, batches, first_sample);
  }
  timing_.train_s += Timing::since(t_epoch);
  return !stopped;
}

// Batch b of the epoch: read, forward, backward, average, optimizer step, log line, checkpoint.
void Trainer::train_step(int epoch, size_t b, size_t batches, int64_t first_sample) {
  const auto& idx = train_sampler_.indices();
  hooks_.begin_step(epoch, b, step_, b % size_t(opts_.log_interval) == 0);
  const size_t start = b * size_t(opts_.batch_size);
  const int n = int(std::min(size_t(opts_.batch_size), idx.size() - start));
  timeline_step((long long)step_);
  BatchReader reader;  // each slice reads its own samples, at the start of forward
  reader.split = &train_;
  reader.idx = idx.data() + start;
  reader.x = x_.data();
  reader.y = y_.data();
  reader.hooks = &hooks_;
  if (record_) record_->record_step(step_, epoch, b, size_t(opts_.batch_size));
  const bool dropout = !opts_.no_dropout;
  if (dropout) torch_rng_.dropout_masks(&net_, n);
  net_.forward(x_.data(), n, dropout, &reader);
  const float loss = net_.backward(y_.data(), n, overlapped_ ? &bucket_starter_ : nullptr);
  hooks_.before_averaging(net_.grads.data(), net_.params.data());
  if (size_ > 1 && !opts_.use_adasum) average_gradients_now();
  if (opts_.use_adasum) {
    adasum_update(lr_);
  } else {
    const int64_t tl = timeline_begin();
    net_.for_each_param_range([&](size_t begin, size_t end) {
      sgd_momentum_step(net_.params.data() + begin, momentum_.data() + begin, net_.grads.data() + begin, end - begin,
                        lr_, float(opts_.momentum), !momentum_started_);
    });
    timeline_end(TimelineKind::kOptimizerStep, tl);
  }
  hooks_.after_step(net_.grads.data(), net_.params.data(), loss, n);
  momentum_started_ = true;
  ++step_;
  if (b % size_t(opts_.log_interval) == 0) {
    std::fprintf(out_, "Train Epoch: %d [%zu/%zu (%.0f%%)]\tLoss: %.6f\n", epoch, b * size_t(n), train_sampler_.size(),
                 100.0 * double(b) / double(batches), double(loss));
    std::fflush(out_);
  }
  if (opts_.checkpoint_every > 0 && step_ % uint64_t(opts_.checkpoint_every) == 0)
    save(epoch, first_sample, b + 1, step_);
}

// Horovod's DistributedOptimizer: the gradient averaged over ranks (the overlapped buckets'
// finish, or one whole-buffer call).
void Trainer::average_gradients_now() {
  const auto t_comm = Clock::now();
  how_.observer = hooks_.allreduce_observer(timeline_allreduce_observer());  // bytes at --inspect steps, slices
  hooks_.comm_begin();
  const int64_t tl = timeline_begin();
  if (overlapped_)
    overlapped_->finish();
  else
    average_gradients(comm_, net_.grads.data(), net_.grads.size(), segments_, how_);
  timeline_gradient_allreduce(tl, net_.grads.size());
  hooks_.comm_end();
  if (timing_.enabled) timing_.comm_s += Timing::since(t_comm);
}

// Horovod's Adasum optimizer: local step, Adasum of the parameter deltas (timed as comm).
void Trainer::adasum_update(float lr) {
  const auto t_comm = Clock::now();
  std::vector<AdasumCoefficients> trace;
  hooks_.comm_begin();
  const int64_t tl = timeline_begin();
  adasum_step(
      comm_, net_.params.data(), momentum_.data(), net_.grads.data(), net_.params.size(), segments_,
      AdasumStepArgs{lr, float(opts_.momentum), !momentum_started_, how_.fp16, hooks_.inspecting() ? &trace : nullptr});
  timeline_gradient_allreduce(tl, net_.params.size());  // the local step and the deltas' Adasum
  hooks_.comm_end();
  hooks_.add_adasum_coefficients(trace);
  if (timing_.enabled) timing_.comm_s += Timing::since(t_comm);
}

// The test pass after an epoch (rank 0 prints the example's line), then the epoch-end checkpoint.
void Trainer::test_pass(int epoch) {
  const auto t_test = Clock::now();
  torch_rng_.start_test_loader();
  timeline_step((long long)step_);  // the test pass and epoch-end checkpoint count as the next step
  const int64_t tl = timeline_begin();
  TestResult r = evaluate(net_, test_, test_sampler_, opts_.test_batch_size, comm_, x_, y_);
  timeline_end(TimelineKind::kTestPass, tl);
  if (rank_ == 0) {
    std::fprintf(out_, "\nTest set: Average loss: %.4f, Accuracy: %.2f%%\n\n", r.loss, 100.0 * r.accuracy);
    std::fflush(out_);
  }
  hooks_.test_done(epoch, step_, r.loss, r.accuracy);
  timing_.test_s += Timing::since(t_test);
  save(epoch + 1, 0, 0, step_);
}

// --checkpoint-dir: rank 0 writes the state the next step starts from (with --use-adasum on W > 1
// ranks every rank's momentum buffer, gathered first: a collective, so every rank saves at the
// same steps).
void Trainer::save(int epoch, int64_t first_sample, size_t next_batch, uint64_t steps) {
  if (opts_.checkpoint_dir.empty()) return;
  const int64_t tl = rank_ == 0 ? timeline_begin() : 0;
  std::vector<float> all_momentum;
  if (rank_momentum_) {
    all_momentum.resize(size_t(size_) * momentum_.size());
    comm_.allgather(all_momentum.data(), momentum_.data(), momentum_.size() * sizeof(float));
  }
  if (rank_ != 0) return;
  TrainState st;
  st.world_size = size_;
  st.batch_size = opts_.batch_size;
  st.seed = opts_.seed;
  st.epoch = epoch;
  st.batch = int64_t(next_batch);
  st.epoch_first_sample = first_sample;
  st.step = int64_t(steps);
  st.momentum_started = momentum_started_;
  st.params = net_.params;
  st.momentum_buffers = rank_momentum_ ? size_ : 1;
  st.momentum = rank_momentum_ ? std::move(all_momentum) : momentum_;
  st.generator = torch_rng_.gen;
  st.run_id = start_.run_id;
  st.has_settings = true;
  st.settings = config_.settings;
  save_checkpoint(opts_.checkpoint_dir, st);
  timeline_end(TimelineKind::kCheckpoint, tl);
}

// The end: the merged --timeline, the summary, BARESGD_TIMING's line, --dump-params.
void Trainer::finish() {
  timeline_finish(comm_);  // --timeline: every rank's events merged into the one file
  hooks_.finish(timing_.train_s);
  if (timing_.enabled)
    std::fprintf(stderr,
                 "timing: rank=%d startup_s=%.4f train_s=%.4f test_s=%.4f comm_s=%.4f overlap_buckets=%zu "
                 "lane_rounds=%llu threads=%d (%s)\n",
                 rank_, timing_.startup_s, timing_.train_s, timing_.test_s, timing_.comm_s,
                 overlapped_ ? overlapped_->buckets().size() : size_t(0),
                 static_cast<unsigned long long>(comm_.sync_lane_rounds()), net_.threads(),
                 thread_rule_name(plan_.threads_rule));
  dump_params(plan_.dump, net_.params);
}

}  // namespace

TrainData load_train_data(const Options& opts) {
  TrainData d{load_mnist(opts.data_dir, true), load_mnist(opts.data_dir, false)};
  return d;
}

void run_training(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm,
                  std::FILE* out) {
  Trainer(opts, threads, data, comm, out).run();
}
