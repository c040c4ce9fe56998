// train: the seed's training loop (Horovod's PyTorch MNIST example) on one rank: epochs of momentum
// SGD with Horovod's DistributedOptimizer semantics, each followed by the test pass.
//
// Read it from the top: Trainer::train_step is one step as the seed's loop takes it (read a batch,
// forward, backward, average the gradient over the ranks, the SGD step), then come the epoch, the
// test pass, the checkpoint and the end; the set-up is last. Everything that watches the run
// (--metrics, --inspect, --check-sync, the summary, --timeline, --sample-record, BARESGD_TIMING)
// sees it through one StepObserver (src/step_observer.h), `watch_` below. A SIGTERM or SIGUSR1
// (src/stop_signal.h) stops the run at a step boundary every rank agrees on (src/stop_agreement.h),
// saved there. Where a run starts
// (torch's seed, or the checkpoint --resume continues) is src/run_start.h's; how the ranks'
// gradients meet is src/gradient_exchange.h's.
#include "src/train.h"
#include "src/safe_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sgd.h"
#include "src/adasum_step.h"
#include "src/checkpoint.h"
#include "src/clock_sync.h"
#include "src/gradient_exchange.h"
#include "src/net.h"
#include "src/resume_plan.h"
#include "src/run_plan.h"
#include "src/run_records.h"
#include "src/run_start.h"
#include "src/sample_record.h"
#include "src/sampler.h"
#include "src/step_observer.h"
#include "src/stop_agreement.h"
#include "src/stop_signal.h"
#include "src/straggler.h"
#include "src/timeline.h"
#include "src/timeline_observer.h"
#include "src/timing_line.h"
#include "src/torch_streams.h"

namespace {

constexpr uint64_t kSamplerSeed = 0;  // DistributedSampler's default seed

// One rank's whole run: the constructor sets it up (checks, net, start state, averaging,
// observers, samplers); run() trains the epochs (train steps, then the test pass) and ends.
class Trainer {
 public:
  Trainer(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm, std::FILE* out);
  int run();  // the exit status: 0, or 128 + the signal that stopped it at a saved step

 private:
  enum class EpochEnd { kDone, kMaxSteps, kSignal };
  void train_step(const StepAt& at, int64_t first_sample);
  void average_gradients();
  void sgd_step();
  void adasum_update();
  EpochEnd train_epoch(int epoch);
  bool stop_agreed();
  void stop_for_signal(int epoch, int64_t first_sample, size_t next_batch);
  void test_pass(int epoch);
  void save(int epoch, int64_t first_sample, size_t next_batch);
  void finish();
  size_t batches() const { return num_batches(train_sampler_.size(), size_t(opts_.batch_size)); }  // per epoch

  const Options& opts_;
  const TrainData& data_;
  Communicator& comm_;
  std::FILE* out_;               // the example's log lines
  const RunPlan plan_;           // what was checked before anything was allocated
  Net net_;                      // parameters and gradients: one flat buffer each
  TorchStreams torch_rng_;       // torch's generator: the init, dropout masks, DataLoader seeds
  std::vector<float> momentum_;  // SGD's momentum buffer (--use-adasum: this rank's own)
  const RunConfig config_;       // what the checkpoints record
  const RunStart start_;         // where the run starts (resumed: the checkpoint's position)
  bool momentum_started_;        // PyTorch's first step sets the buffer to the gradient
  const float lr_;               // --lr, scaled by the world size as the example does
  StepObservers watch_;          // everything that watches the run
  GradientExchange exchange_;    // Horovod's averaging of the gradients over the ranks
  DistributedSampler train_sampler_, test_sampler_;
  std::vector<float> x_;    // a batch's images (max_batch, 1, 28, 28)
  std::vector<int32_t> y_;  // its labels
  uint64_t step_;           // optimizer steps taken (a resumed run counts on)
  // The step whose state the newest checkpoint holds, or the run's start (where --resume starts it
  // again as it is: the checkpoint it resumed, or none), and rank 0's file of it ("" at the start):
  // a stop at that step saves nothing new.
  uint64_t saved_step_;
  std::string saved_path_;
  StopVote stop_;          // the agreed stop, once there is one
  const TestPause pause_;  // BARESGD_TEST_STOP_AT
  ClockSync clocks_;       // every rank's clock offset to rank 0's (--metrics, --timeline)
};

// Reads a training batch's samples into the batch buffers for Net::forward, slice by slice
// (gather_batch over each slice's rows, on the thread that runs the slice). Slice 0, always on the
// calling thread, tells the observers when it reads its share (the step's data time).
struct BatchReader : SliceInput {
  BatchReader(const MnistSplit& split, const uint32_t* idx, float* x, int32_t* y, StepObserver* watch)
      : split(split), idx(idx), x(x), y(y), watch(watch) {}
  void read(int begin, int end) override {
    if (begin == 0) watch->begin(Stretch::kRead);
    gather_batch(x + size_t(begin) * kImagePixels, y + begin, split, idx + begin, end - begin);
    if (begin == 0) watch->end(Stretch::kRead);
  }
  const MnistSplit& split;
  const uint32_t* idx;  // the batch's sample indices
  float* x;
  int32_t* y;
  StepObserver* watch;
};

// One optimizer step, the body of the seed's loop over its train loader: read batch at.batch,
// forward, backward (the batch's mean nll loss), average the gradient over the ranks, momentum
// SGD; then the example's log line and, every --checkpoint-every steps, a checkpoint.
void Trainer::train_step(const StepAt& at, int64_t first_sample) {
  watch_.step_begin(at);
  const auto& idx = train_sampler_.indices();
  const size_t start = at.batch * size_t(opts_.batch_size);
  const int n = int(std::min(size_t(opts_.batch_size), idx.size() - start));
  BatchReader batch(data_.train, idx.data() + start, x_.data(), y_.data(), &watch_);
  const bool dropout = !opts_.no_dropout;
  if (dropout) torch_rng_.dropout_masks(&net_, n);  // the draws the example's forward makes
  net_.forward(x_.data(), n, dropout, &batch);      // each compute slice reads its samples first
  const float loss = net_.backward(y_.data(), n, exchange_.backward_listener());
  watch_.gradients_ready(net_.grads.data(), net_.params.data());
  if (opts_.use_adasum) {
    adasum_update();  // Horovod's Adasum optimizer: a local step, then the ranks' deltas combined
  } else {
    if (comm_.size() > 1) average_gradients();  // the DistributedOptimizer's allreduce
    sgd_step();                                 // optimizer.step()
  }
  watch_.step_end(at, net_.grads.data(), net_.params.data(), loss, n);
  momentum_started_ = true;
  ++step_;
  if (at.logged) {
    std::fprintf(out_, "Train Epoch: %d [%zu/%zu (%.0f%%)]\tLoss: %.6f\n", at.epoch, at.batch * size_t(n),
                 train_sampler_.size(), 100.0 * double(at.batch) / double(batches()), double(loss));
    std::fflush(out_);
  }
  if (opts_.checkpoint_every > 0 && step_ % uint64_t(opts_.checkpoint_every) == 0)
    save(at.epoch, first_sample, at.batch + 1);
}

// Horovod's DistributedOptimizer: the gradient averaged over the ranks (--overlap: finishing the
// buckets backward started; else one allreduce of the whole buffer).
void Trainer::average_gradients() {
  watch_.begin(Stretch::kExchange);
  exchange_.average(watch_.allreduce_observer(nullptr));
  watch_.end(Stretch::kExchange);
}

// optimizer.step(): momentum SGD over the flat buffer, each compute thread on its own range.
void Trainer::sgd_step() {
  watch_.begin(Stretch::kOptimizerStep);
  net_.for_each_param_range([&](size_t begin, size_t end) {
    sgd_momentum_step(net_.params.data() + begin, momentum_.data() + begin, net_.grads.data() + begin, end - begin, lr_,
                      float(opts_.momentum), !momentum_started_);
  });
  watch_.end(Stretch::kOptimizerStep);
}

// Horovod's Adasum optimizer: this rank's local step, then Adasum of the ranks' parameter deltas
// (observed as the exchange).
void Trainer::adasum_update() {
  watch_.begin(Stretch::kExchange);
  adasum_step(
      comm_, net_.params.data(), momentum_.data(), net_.grads.data(), net_.params.size(), exchange_.segments(),
      AdasumStepArgs{lr_, float(opts_.momentum), !momentum_started_, exchange_.how().fp16, watch_.adasum_trace()});
  watch_.end(Stretch::kExchange);
}

// The epoch's train steps from where the run starts it, until its end, --max-steps or an agreed
// stop signal (asked before every step: the first step too, so a signal during start-up stops the
// run before it trains).
Trainer::EpochEnd Trainer::train_epoch(int epoch) {
  // A resumed epoch may have been begun by another world size: this one deals out its rest.
  const bool resumed = epoch == start_.epoch;
  const int64_t first_sample = resumed ? start_.first_sample : 0;
  const size_t first_batch = resumed ? start_.batch : 0;
  watch_.epoch_begin(epoch, size_t(first_sample));
  train_sampler_.set_epoch(uint64_t(epoch), size_t(first_sample));
  if (first_batch == 0 && first_sample == 0) torch_rng_.start_train_loader();  // a resumed epoch drew it already
  EpochEnd end = EpochEnd::kDone;
  for (size_t b = first_batch; b < batches(); ++b) {
    if (opts_.max_steps >= 0 && step_ >= uint64_t(opts_.max_steps)) {
      end = EpochEnd::kMaxSteps;
      break;
    }
    if (stop_agreed()) {
      stop_for_signal(epoch, first_sample, b);
      return EpochEnd::kSignal;
    }
    train_step(StepAt{epoch, b, step_, b % size_t(opts_.log_interval) == 0}, first_sample);
  }
  watch_.epoch_end(epoch);
  return end;
}

// The step boundary's vote (one small collective, every kStopVoteEvery steps): true when any rank
// received a stop signal. On the timeline as "stop vote allreduce" (its 16 bytes), as all traffic is.
bool Trainer::stop_agreed() {
  maybe_pause_for_test(pause_, comm_.rank(), step_);
  if (!is_stop_vote_step(static_cast<long long>(step_))) return false;
  timeline_step(static_cast<long long>(step_));  // the vote is the first traffic of the step it precedes
  const int64_t t = timeline_traffic_begin();
  stop_ = agree_on_stop(comm_, stop_signal_received());
  if (comm_.size() > 1) timeline_traffic("stop vote allreduce", t, 2 * sizeof(double));
  return stop_.signal != 0;
}

// The agreed stop before batch next_batch: the checkpoint of this step (unless the newest one
// holds it already), a barrier so no rank exits before it is on disk (a launcher or srun seeing
// one rank end may stop the rest), and rank 0's one line.
void Trainer::stop_for_signal(int epoch, int64_t first_sample, size_t next_batch) {
  if (!opts_.checkpoint_dir.empty() && step_ != saved_step_) save(epoch, first_sample, next_batch);
  if (comm_.size() > 1) comm_.barrier();
  if (comm_.rank() != 0) return;
  const std::string saved = opts_.checkpoint_dir.empty() ? "nothing saved (no --checkpoint-dir)"
                            : saved_path_.empty()        ? "nothing to save (no step since the run started)"
                                                         : "saved " + saved_path_;
  std::fflush(out_);
  std::fprintf(stderr,
               "train: stopped by %s (received by %d of %d ranks) after step %llu (epoch %d, batch %zu): %s%s\n",
               stop_signal_name(stop_.signal).c_str(), stop_.ranks, comm_.size(), (unsigned long long)step_, epoch,
               next_batch, saved.c_str(), opts_.checkpoint_dir.empty() ? "" : "; continue with --resume");
  std::fflush(stderr);
}

int Trainer::run() {
  for (int epoch = start_.epoch; epoch <= opts_.epochs; ++epoch) {
    const EpochEnd end = train_epoch(epoch);
    if (end == EpochEnd::kSignal) return stop_.exit_code();
    if (end == EpochEnd::kMaxSteps) break;
    test_pass(epoch);
  }
  finish();
  return 0;
}

struct TestResult {
  double loss, accuracy;  // averaged over ranks
};

// The example's test(): the mean nll loss and the accuracy of this rank's share of the test set,
// averaged over the ranks (one allreduce).
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
  const int64_t t = timeline_traffic_begin();
  comm.allreduce_sum(m, 2);
  timeline_traffic("test-metric allreduce", t, sizeof m);
  return {m[0] / comm.size(), m[1] / comm.size()};
}

// The test pass after an epoch (rank 0 prints the example's line), then the epoch-end checkpoint.
void Trainer::test_pass(int epoch) {
  torch_rng_.start_test_loader();
  watch_.test_begin(step_);  // the test pass and epoch-end checkpoint count as the next step
  const TestResult r = evaluate(net_, data_.test, test_sampler_, opts_.test_batch_size, comm_, x_, y_);
  watch_.test_end(epoch, step_, r.loss, r.accuracy);
  if (comm_.rank() == 0) {
    std::fprintf(out_, "\nTest set: Average loss: %.4f, Accuracy: %.2f%%\n\n", r.loss, 100.0 * r.accuracy);
    std::fflush(out_);
  }
  save(epoch + 1, 0, 0);
}

// --checkpoint-dir: rank 0 writes the state the next step starts from (with --use-adasum on W > 1
// ranks every rank's momentum buffer, gathered first: a collective, so every rank saves at the
// same steps).
void Trainer::save(int epoch, int64_t first_sample, size_t next_batch) {
  if (opts_.checkpoint_dir.empty()) return;
  const bool writer = comm_.rank() == 0;
  const bool own_momentum = opts_.use_adasum && comm_.size() > 1;  // every rank's buffer is saved
  saved_step_ = step_;
  if (writer) watch_.begin(Stretch::kCheckpoint);
  std::vector<float> all_momentum;
  if (own_momentum) {
    all_momentum.resize(size_t(comm_.size()) * momentum_.size());
    comm_.allgather(all_momentum.data(), momentum_.data(), momentum_.size() * sizeof(float));
  }
  if (!writer) return;
  TrainState st;
  st.world_size = comm_.size();
  st.batch_size = opts_.batch_size;
  st.seed = opts_.seed;
  st.epoch = epoch;
  st.batch = int64_t(next_batch);
  st.epoch_first_sample = first_sample;
  st.step = int64_t(step_);
  st.momentum_started = momentum_started_;
  st.params = net_.params;
  st.momentum_buffers = own_momentum ? comm_.size() : 1;
  st.momentum = own_momentum ? std::move(all_momentum) : momentum_;
  st.generator = torch_rng_.gen;
  st.run_id = start_.run_id;
  st.has_settings = true;
  st.settings = config_.settings;
  saved_path_ = save_checkpoint(opts_.checkpoint_dir, st);
  watch_.end(Stretch::kCheckpoint);
}

// --dump-params FILE (RunPlan::dump: this rank's file, checked at the start).
void dump_params(const std::string& dump, const std::vector<float>& params) {
  if (dump.empty()) return;
  std::FILE* f = create_output_stream(dump, "--dump-params file", "wb");
  size_t w = std::fwrite(params.data(), sizeof(float), params.size(), f);
  if (std::fclose(f) != 0 || w != params.size())
    throw std::runtime_error(dump + ": write failed: " + std::strerror(errno));
}

// The end: the observers' (the merged --timeline, the summary, BARESGD_TIMING's line), then
// --dump-params.
void Trainer::finish() {
  watch_.run_end();
  dump_params(plan_.dump, net_.params);
}

// ---- Set-up: what the constructor runs, in the order of the Trainer's members. ----

// torch.manual_seed(args.seed) on every rank, then model = Net().
TorchStreams seeded_streams(int seed, Net* net) {
  TorchStreams s;
  s.seed(uint64_t(seed));
  s.init_net(net);
  return s;
}

// Horovod: the learning rate scaled by the number of ranks (not with Adasum on CPU).
double scaled_lr(const Options& opts, int size) { return opts.use_adasum ? opts.lr : opts.lr * size; }

// The observers set up before the gradient exchange, the first that every call reaches:
// BARESGD_TIMING's line (closing calls go in reverse, so its line follows the summary) and the
// records (--metrics' header is a collective, made before the exchange opens its channels; their
// byte counter passes the allreduce's events on to the timeline's, added after them).
StepObservers first_observers(const Options& opts, Communicator& comm, const RunPlan& plan,
                              const ThreadPolicy& threads) {
  RunFacts facts;
  facts.host_oversubscribed = comm.local_size() > threads.host_cpus;
  facts.lr = scaled_lr(opts, comm.size());
  facts.elem_bytes = opts.fp16_allreduce ? 2 : 4;
  facts.algorithm = allreduce_algorithm_name(plan.algorithm);
  StepObservers watch;
  if (opts.straggler_spec.active()) watch.add(make_straggler(opts.straggler, opts.straggler_spec, comm));
  if (timing_enabled()) watch.add(std::make_unique<TimingLine>(comm));
  watch.add(std::make_unique<RunRecords>(opts, comm, facts));
  return watch;
}

Trainer::Trainer(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm, std::FILE* out)
    : opts_(opts),
      data_(data),
      comm_(comm),
      out_(out),
      plan_(plan_run(opts, threads, data.train.count, data.test.count, comm)),
      net_(plan_.max_batch, plan_.threads),
      torch_rng_(seeded_streams(opts.seed, &net_)),
      momentum_(Net::kNumParams, 0.0f),
      config_(run_config_now(opts, comm.size(), net_.threads())),
      start_(start_from_rank0(opts, comm, config_, &net_.params, &momentum_, &torch_rng_.gen)),
      momentum_started_(start_.momentum_started),
      lr_(float(scaled_lr(opts, comm.size()))),
      watch_(first_observers(opts, comm, plan_, threads)),
      exchange_(opts, plan_.algorithm, comm, net_),
      train_sampler_(size_t(data.train.count), comm.size(), comm.rank(), true, kSamplerSeed),
      test_sampler_(size_t(data.test.count), comm.size(), comm.rank(), true, kSamplerSeed),
      x_(size_t(net_.max_batch()) * kImagePixels),
      y_(size_t(net_.max_batch())),
      step_(start_.step),
      saved_step_(start_.step),
      pause_(test_pause_from_environment()) {
  watch_.add(std::make_unique<TimelineObserver>(comm));
  if (comm.rank() == 0 && !opts.sample_record.empty())
    watch_.add(std::make_unique<SampleRecorder>(opts.sample_record, step_, size_t(data.train.count), comm.size(),
                                                opts.batch_size));
  // --timeline starts here: clocks synced to rank 0's, tracks named, each bucket on its own track.
  // One clock sync for --metrics and --timeline alike, so their wait times are the same numbers.
  const bool records_times = !opts.metrics.empty() || timeline_requested();
  if (records_times) clocks_ = sync_clocks(comm, kClockSyncRounds, &steady_now_ns);
  watch_.run_begin(RunShape{net_.threads(), thread_rule_name(plan_.threads_rule), exchange_.how(),
                            exchange_.bucket_layers(), records_times ? &clocks_ : nullptr});
  exchange_.set_overlap_observer(watch_.overlap_observer());
}

}  // namespace

TrainData load_train_data(const Options& opts) {
  TrainData d{load_mnist(opts.data_dir, true), load_mnist(opts.data_dir, false)};
  return d;
}

int run_training(const Options& opts, const ThreadPolicy& threads, TrainData& data, Communicator& comm,
                 std::FILE* out) {
  return Trainer(opts, threads, data, comm, out).run();
}
