// train: epochs of momentum SGD with Horovod's DistributedOptimizer semantics, and the test pass.
#include "src/train.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cblas.h>

#include "comm/allreduce.h"
#include "comm/distributed_optimizer.h"
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
  if (other) {
    if (!opts.resume_any_config) throw std::runtime_error(refusal_of(*path, changes, false));
  }
  if (st->world_size != now.world_size && st->momentum_buffers > 1)
    throw std::runtime_error("checkpoint " + *path + " holds each of its " + std::to_string(st->world_size) +
                             " ranks' own --use-adasum momentum; it cannot continue on " +
                             std::to_string(now.world_size) + (now.world_size == 1 ? " rank" : " ranks") +
                             " (Adasum keeps one momentum buffer per rank)");
  std::fprintf(stderr, "train: resuming from %s (epoch %d, batch %lld, step %lld), run %s\n", path->c_str(), st->epoch,
               (long long)st->batch, (long long)st->step, st->run_id.empty() ? "unknown" : st->run_id.c_str());
  const std::string harmless = changes_text(changes, true, {SettingChange::kHarmless});
  if (!harmless.empty())
    std::fprintf(stderr, "train: it was written with %s, this run has %s (the steps compute the same numbers%s)\n",
                 harmless.c_str(), changes_text(changes, false, {SettingChange::kHarmless}).c_str(),
                 harmless.find("--threads") != std::string::npos ? ", up to float rounding" : "");
  // A changed configuration is a new run (its files never prune the run it came from).
  *run_id = other || st->run_id.empty() ? new_run_id() : st->run_id;
  if (st->run_id.empty())
    std::fprintf(stderr,
                 "train: %s is a version %d checkpoint: it records no run id and no --lr, --momentum, "
                 "dropout or averaging options (only world size, --batch-size and --seed were compared); "
                 "this run continues as run %s\n",
                 path->c_str(), st->version, run_id->c_str());
  if (st->world_size != now.world_size) continue_at_sample(opts, now, st);
  if (other) {
    std::string moved;
    if (st->batch_size != now.batch_size && st->batch > 0) {
      const int64_t b = batch_for_new_size(*st, now.batch_size);
      moved = "; batch " + std::to_string(st->batch) + " of --batch-size " + std::to_string(st->batch_size) +
              " continues at batch " + std::to_string(b) + " of --batch-size " + std::to_string(now.batch_size);
      st->batch = b;
    }
    std::fprintf(stderr, "train: --resume-any-config: continuing %s with %s instead of %s as new run %s%s\n",
                 path->c_str(), changes_text(changes, false, {SettingChange::kNumbers}).c_str(),
                 changes_text(changes, true, {SettingChange::kNumbers}).c_str(), run_id->c_str(), moved.c_str());
  }
  return true;
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
  // header: ok, found, epoch, batch, step, started, momentum buffers, epoch's first sample
  int64_t h[8] = {1, 0, 1, 0, 0, 0, 1, 0};
  std::string error;
  TrainState st;
  if (comm.rank() == 0) {
    try {
      prepare_checkpoint_dir(opts.checkpoint_dir);
      for (const auto& t : remove_stale_temp_files(opts.checkpoint_dir))
        std::fprintf(stderr, "train: removed %s, a checkpoint an earlier writer did not finish\n", t.c_str());
      std::string path;
      if (opts.resume && choose_resume_checkpoint(opts, now, &st, &path, &r.run_id)) {
        h[1] = 1;
        h[2] = st.epoch;
        h[3] = st.batch;
        h[4] = st.step;
        h[5] = st.momentum_started;
        h[6] = st.momentum_buffers;
        h[7] = st.epoch_first_sample;
        *params = st.params;
        momentum->assign(st.momentum.begin(), st.momentum.begin() + std::ptrdiff_t(params->size()));
        *generator = st.generator;
      } else {
        r.run_id = new_run_id();
        std::fprintf(stderr, "train: run %s: checkpoints go to %s/ckpt-%s-<step>.bin\n", r.run_id.c_str(),
                     opts.checkpoint_dir.c_str(), r.run_id.c_str());
      }
    } catch (const std::exception& e) {
      h[0] = 0;
      error = e.what();
    }
  }
  if (h[0] == 0) print_rank0_error_now(error);
  comm.broadcast(h, sizeof h, 0);
  if (h[0] == 0)
    throw_shared_failure(comm.rank(), error, "rank 0 could not use --checkpoint-dir " + opts.checkpoint_dir);
  if (h[1]) {
    r.epoch = int(h[2]);
    r.batch = size_t(h[3]);
    r.step = uint64_t(h[4]);
    r.momentum_started = h[5] != 0;
    r.first_sample = h[7];
    comm.broadcast(generator, sizeof *generator, 0);
    // h[6] is 1 or this world size (decode_checkpoint, choose_resume_checkpoint). Without
    // --use-adasum every rank's buffer must be equal: rank 0's, as from a one-buffer checkpoint.
    if (h[6] > 1 && opts.use_adasum) {
      r.rank_momentum = comm.rank() == 0 ? std::move(st.momentum) : std::vector<float>(size_t(h[6]) * params->size());
      comm.broadcast(r.rank_momentum.data(), r.rank_momentum.size() * sizeof(float), 0);
    }
  }
  return r;
}

// Refuses, before anything is allocated, batch buffers this rank's memory cannot hold (their
// bytes, and the input and label buffers, against memory_budget()).
void check_batch_memory(const Options& opts, int max_batch, int threads) {
  const uint64_t need =
      Net::buffer_bytes(max_batch, threads) + uint64_t(max_batch) * (784 * sizeof(float) + sizeof(int32_t));
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

// Tells the overlapped averaging which of backward_layers() Net's backward has finished.
struct BucketStarter : BackwardListener {
  OverlappedAveraging* averaging = nullptr;
  void layer_done(int layer) override { averaging->layer_done(Net::kNumLayers - 1 - layer); }
};

}  // namespace

TrainData load_train_data(const Options& opts) {
  TrainData d{load_mnist(opts.data_dir, true), load_mnist(opts.data_dir, false)};
  return d;
}

void run_training(const Options& opts, TrainData& data, Communicator& comm, std::FILE* out) {
  // BARESGD_TIMING=1: one machine-readable line per rank on stderr at the end (bench/; tests read
  // overlap_buckets, the number of buckets the overlapped averaging ran, 0 for the whole buffer).
  using Clock = std::chrono::steady_clock;
  const char* timing_env = std::getenv("BARESGD_TIMING");
  const bool timing = timing_env && std::string(timing_env) == "1";
  double train_s = 0, test_s = 0, startup_s = -1, comm_s = 0;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };

  const MnistSplit& train = data.train;
  const MnistSplit& test = data.test;

  const int rank = comm.rank(), size = comm.size();
  // Horovod's refusals (Adasum on a non-power-of-two world, Adasum with predivide), on every rank
  // before any collective, at any world size.
  check_training_configuration(opts, size);
  const std::string dump = dump_path_of(opts.dump_params, rank);
  check_dump_path(dump);
  const AllreduceAlgorithm algorithm = parse_allreduce_algorithm(opts.allreduce);
  if (std::string why = allreduce_unsupported_reason(algorithm, comm.backend_name(), size); !why.empty())
    throw std::runtime_error(why);
  const int eval_chunk = std::min(opts.test_batch_size, std::max(opts.batch_size, 64));
  // Compute threads per rank: the count train_main gave OpenBLAS (--threads, OPENBLAS_NUM_THREADS,
  // else cores / ranks on this host). The net splits each batch across them itself; OpenBLAS only
  // sees the small fc matrices inside each slice, so it runs single-threaded (its idle workers
  // would otherwise spin in sched_yield against ours).
  const int threads = std::max(1, openblas_get_num_threads());
  openblas_set_num_threads(1);
  // Batch buffers hold no more samples than this rank's shard of the data set can fill.
  const int train_shard = int((int64_t(train.count) + size - 1) / size),
            test_shard = int((int64_t(test.count) + size - 1) / size);
  const int max_batch = std::max(std::min(opts.batch_size, train_shard), std::min(eval_chunk, test_shard));
  check_batch_memory(opts, max_batch, threads);
  Net net(max_batch, threads);
  TorchStreams torch_rng;  // torch.manual_seed(args.seed) on every rank, then model = Net()
  torch_rng.seed(uint64_t(opts.seed));
  torch_rng.init_net(&net);
  std::vector<float> momentum(Net::kNumParams, 0.0f);

  // --checkpoint-dir / --resume: rank 0 prepares the directory and reads the newest valid
  // checkpoint; its position and state reach every rank with the start-up broadcast.
  const RunConfig config = run_config_now(opts, size, net.threads());
  Resume start = prepare_checkpoints(opts, comm, config, &net.params, &momentum, &torch_rng.gen);

  // Horovod: broadcast parameters and optimizer state from rank 0.
  // --use-adasum: after this broadcast every rank's momentum buffer evolves on its own (Horovod's
  // Adasum optimizer never re-synchronises it). So on W > 1 ranks a checkpoint holds every rank's
  // buffer (gathered to rank 0 when it is saved) and a resumed run gives each rank its own back,
  // which makes a resumed Adasum run equal an uninterrupted one; a checkpoint with one buffer
  // (version 2, or written without --use-adasum) starts every rank from rank 0's.
  comm.broadcast(net.params.data(), net.params.size() * sizeof(float), 0);
  comm.broadcast(momentum.data(), momentum.size() * sizeof(float), 0);
  if (!start.rank_momentum.empty()) {
    const auto mine = start.rank_momentum.begin() + std::ptrdiff_t(size_t(rank) * momentum.size());
    std::copy(mine, mine + std::ptrdiff_t(momentum.size()), momentum.begin());
    start.rank_momentum = {};
  }
  bool momentum_started = start.momentum_started;
  const bool rank_momentum = opts.use_adasum && size > 1;  // every rank's own buffer is saved
  auto save = [&](int epoch, int64_t first_sample, size_t next_batch, uint64_t steps) {
    if (opts.checkpoint_dir.empty()) return;
    const int64_t tl = rank == 0 ? timeline_begin() : 0;
    std::vector<float> all_momentum;
    if (rank_momentum) {  // a collective: every rank saves at the same steps
      all_momentum.resize(size_t(size) * momentum.size());
      comm.allgather(all_momentum.data(), momentum.data(), momentum.size() * sizeof(float));
    }
    if (rank != 0) return;
    TrainState st;
    st.world_size = size;
    st.batch_size = opts.batch_size;
    st.seed = opts.seed;
    st.epoch = epoch;
    st.batch = int64_t(next_batch);
    st.epoch_first_sample = first_sample;
    st.step = int64_t(steps);
    st.momentum_started = momentum_started;
    st.params = net.params;
    st.momentum_buffers = rank_momentum ? size : 1;
    st.momentum = rank_momentum ? std::move(all_momentum) : momentum;
    st.generator = torch_rng.gen;
    st.run_id = start.run_id;
    st.has_settings = true;
    st.settings = config.settings;
    save_checkpoint(opts.checkpoint_dir, st);
    timeline_end(TimelineKind::kCheckpoint, tl);
  };

  // Horovod: scale the learning rate by the number of ranks (not with Adasum on CPU).
  const float lr = float(opts.use_adasum ? opts.lr : opts.lr * size);
  GradientAveraging how;
  how.predivide_factor = opts.gradient_predivide_factor;
  how.fp16 = opts.fp16_allreduce;
  how.adasum = opts.use_adasum;
  how.algorithm = algorithm;
  std::vector<Segment> segments;
  for (const ParamView& p : Net::kParams) segments.push_back({p.offset, p.count});
  RunFacts facts;
  facts.lr = opts.use_adasum ? opts.lr : opts.lr * size;
  facts.elem_bytes = how.fp16 ? 2 : 4;
  facts.algorithm = allreduce_algorithm_name(how.algorithm);
  TrainHooks hooks(opts, comm, facts);  // --metrics, --inspect, --check-sync, the summary
  // --overlap on: each bucket's exchange starts inside backward, finish() ends it before the step;
  // where it could not give the whole-buffer call's bits (overlap_refusal), the whole buffer.
  std::unique_ptr<OverlappedAveraging> overlapped;
  BucketStarter bucket_starter;
  if (opts.overlap && overlap_refusal(comm, how, Net::kNumParams).empty()) {
    overlapped = std::make_unique<OverlappedAveraging>(comm, net.grads.data(), backward_layers(), how);
    bucket_starter.averaging = overlapped.get();
  }

  DistributedSampler train_sampler(size_t(train.count), size, rank, true, kSamplerSeed);
  DistributedSampler test_sampler(size_t(test.count), size, rank, true, kSamplerSeed);

  std::vector<float> x(size_t(net.max_batch()) * 784);
  std::vector<int32_t> y(size_t(net.max_batch()));
  uint64_t step = start.step;
  std::unique_ptr<SampleRecord> record;  // --sample-record: rank 0 writes every rank's samples
  if (rank == 0 && !opts.sample_record.empty()) record = std::make_unique<SampleRecord>(opts.sample_record, step);
  timeline_start(comm, net.threads(), how);  // --timeline: clocks synced to rank 0's, tracks named
  bool stop = false;

  for (int epoch = start.epoch; epoch <= opts.epochs && !stop; ++epoch) {
    const auto t_epoch = Clock::now();
    if (startup_s < 0) startup_s = process_seconds();
    // A resumed epoch may have been begun by another world size: this one deals out its rest.
    const int64_t first_sample = epoch == start.epoch ? start.first_sample : 0;
    train_sampler.set_epoch(uint64_t(epoch), size_t(first_sample));
    const auto& idx = train_sampler.indices();
    const size_t batches = num_batches(train_sampler.size(), size_t(opts.batch_size));
    if (record) record->begin_epoch(size_t(train.count), size, uint64_t(epoch), size_t(first_sample));
    const size_t first_batch = epoch == start.epoch ? start.batch : 0;
    if (first_batch == 0 && first_sample == 0) torch_rng.start_train_loader();  // a resumed epoch drew it already
    for (size_t b = first_batch; b < batches; ++b) {
      if (opts.max_steps >= 0 && step >= uint64_t(opts.max_steps)) {
        stop = true;
        break;
      }
      hooks.begin_step(epoch, b, step, b % size_t(opts.log_interval) == 0);
      const size_t start = b * size_t(opts.batch_size);
      const int n = int(std::min(size_t(opts.batch_size), idx.size() - start));
      timeline_step((long long)step);
      int64_t tl = timeline_begin();
      gather_batch(x.data(), y.data(), train, idx.data() + start, n);
      timeline_end(TimelineKind::kBatchRead, tl);
      if (record) record->record_step(step, epoch, b, size_t(opts.batch_size));
      hooks.data_done();
      const bool dropout = !opts.no_dropout;
      if (dropout) torch_rng.dropout_masks(&net, n);
      net.forward(x.data(), n, dropout);
      const float loss = net.backward(y.data(), n, overlapped ? &bucket_starter : nullptr);
      hooks.before_averaging(net.grads.data(), net.params.data());
      if (size > 1 && !opts.use_adasum) {
        const auto t_comm = Clock::now();
        how.observer = hooks.allreduce_observer(timeline_allreduce_observer());  // bytes at --inspect steps, slices
        hooks.comm_begin();
        tl = timeline_begin();
        if (overlapped)
          overlapped->finish();
        else
          average_gradients(comm, net.grads.data(), net.grads.size(), segments, how);
        timeline_gradient_allreduce(tl, net.grads.size());
        hooks.comm_end();
        if (timing) comm_s += since(t_comm);
      }
      if (opts.use_adasum) {
        // Horovod's Adasum optimizer: local step, Adasum of the parameter deltas (timed as comm).
        const auto t_comm = Clock::now();
        std::vector<AdasumCoefficients> trace;
        hooks.comm_begin();
        tl = timeline_begin();
        adasum_step(comm, net.params.data(), momentum.data(), net.grads.data(), net.params.size(), segments,
                    AdasumStepArgs{lr, float(opts.momentum), !momentum_started, how.fp16,
                                   hooks.inspecting() ? &trace : nullptr});
        timeline_gradient_allreduce(tl, net.params.size());  // the local step and the deltas' Adasum
        hooks.comm_end();
        hooks.add_adasum_coefficients(trace);
        if (timing) comm_s += since(t_comm);
      } else {
        tl = timeline_begin();
        sgd_momentum_step(net.params.data(), momentum.data(), net.grads.data(), net.params.size(), lr,
                          float(opts.momentum), !momentum_started);
        timeline_end(TimelineKind::kOptimizerStep, tl);
      }
      hooks.after_step(net.grads.data(), net.params.data(), loss, n);
      momentum_started = true;
      ++step;
      if (b % size_t(opts.log_interval) == 0) {
        std::fprintf(out, "Train Epoch: %d [%zu/%zu (%.0f%%)]\tLoss: %.6f\n", epoch, b * size_t(n),
                     train_sampler.size(), 100.0 * double(b) / double(batches), double(loss));
        std::fflush(out);
      }
      if (opts.checkpoint_every > 0 && step % uint64_t(opts.checkpoint_every) == 0)
        save(epoch, first_sample, b + 1, step);
    }
    train_s += since(t_epoch);
    if (stop) break;
    const auto t_test = Clock::now();
    torch_rng.start_test_loader();
    timeline_step((long long)step);  // the test pass and epoch-end checkpoint count as the next step
    const int64_t tl = timeline_begin();
    TestResult r = evaluate(net, test, test_sampler, opts.test_batch_size, comm, x, y);
    timeline_end(TimelineKind::kTestPass, tl);
    if (rank == 0) {
      std::fprintf(out, "\nTest set: Average loss: %.4f, Accuracy: %.2f%%\n\n", r.loss, 100.0 * r.accuracy);
      std::fflush(out);
    }
    hooks.test_done(epoch, step, r.loss, r.accuracy);
    test_s += since(t_test);
    save(epoch + 1, 0, 0, step);
  }
  timeline_finish(comm);  // --timeline: every rank's events merged into the one file
  hooks.finish(train_s);
  if (timing)
    std::fprintf(stderr, "timing: rank=%d startup_s=%.4f train_s=%.4f test_s=%.4f comm_s=%.4f overlap_buckets=%zu\n",
                 rank, startup_s, train_s, test_s, comm_s, overlapped ? overlapped->buckets().size() : size_t(0));

  // --dump-params FILE (dump_path_of: this rank's file, checked at the start).
  if (!dump.empty()) {
    std::FILE* f = std::fopen(dump.c_str(), "wb");
    if (!f) throw std::runtime_error(dump + ": cannot write: " + std::strerror(errno));
    size_t w = std::fwrite(net.params.data(), sizeof(float), net.params.size(), f);
    if (std::fclose(f) != 0 || w != net.params.size())
      throw std::runtime_error(dump + ": write failed: " + std::strerror(errno));
  }
}
