// run_records: the observability features around the Trainer's steps (see run_records.h).
#include "src/run_records.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "src/comm_split.h"
#include "src/net.h"
#include "src/shared_failure.h"
#include "src/allreduce_plan.h"
#include "src/timeline.h"

namespace {

double l2_norm(const float* v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(v[i]) * double(v[i]);
  return std::sqrt(s);
}

template <class T>
std::vector<T> allgather_of(Communicator& comm, const std::vector<T>& mine) {
  std::vector<T> all(mine.size() * size_t(comm.size()));
  comm.allgather(all.data(), mine.data(), mine.size() * sizeof(T));
  return all;
}

std::string this_host(const Communicator& comm) {
  if (!comm.info().hostname.empty()) return comm.info().hostname;
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Every rank's host name, in rank order (fixed 256-byte slots, one allgather).
std::vector<std::string> gather_hosts(Communicator& comm) {
  std::vector<char> mine(256, '\0');
  const std::string h = this_host(comm).substr(0, 255);
  std::memcpy(mine.data(), h.data(), h.size());
  std::vector<char> all = allgather_of(comm, mine);
  std::vector<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r) hosts.emplace_back(all.data() + size_t(r) * 256);
  return hosts;
}

PerturbSpec perturb_from_environment() {
  const char* v = std::getenv("BARESGD_TEST_PERTURB");
  try {
    PerturbSpec s = parse_perturb_spec(v ? v : "");
    if (s.active) check_perturb_layer(s);
    return s;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace

RunRecords::RunRecords(const Options& opts, Communicator& comm, const RunFacts& facts)
    : opts_(opts),
      comm_(comm),
      facts_(facts),
      rank_(comm.rank()),
      size_(comm.size()),
      backend_(comm.backend_name()),
      clock_(!opts.metrics.empty()),
      perturb_(perturb_from_environment()) {
  if (!opts.inspect_dump.empty()) check_dump_dir(opts.inspect_dump);
  if (opts.metrics.empty()) return;
  enable_exchange_sampling();
  // Rank 0 opens the file; the outcome reaches every rank, so all stop together on failure.
  std::string error;
  int32_t ok = 1;
  if (rank_ == 0) {
    try {
      metrics_.open(opts.metrics);
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  if (!ok) print_rank0_error_now(error);
  comm.broadcast(&ok, sizeof ok, 0);
  if (!ok) throw_shared_failure(rank_, error, "rank 0 could not write --metrics " + opts.metrics);
  MetricsHeader h;
  h.world_size = size_;
  h.backend = backend_;
  h.algorithm = facts.algorithm;
  h.hosts = gather_hosts(comm);
  for (int32_t over : allgather_of(comm, std::vector<int32_t>{facts.host_oversubscribed ? 1 : 0}))
    h.oversubscribed = h.oversubscribed || over != 0;
  h.link_delay_ms = opts.link_delay_ms;
  h.link_bytes_per_s = opts.link_bytes_per_s;
  h.straggler_rank = opts.straggler_spec.rank;
  fill_versions(&h, backend_);
  metrics_.line(header_record(h, opts));
  metrics_.flush();
}

void RunRecords::run_begin(const RunShape& shape) {
  if (shape.clocks) clock_offset_ns_ = shape.clocks->offset_ns[size_t(rank_)];
}

void RunRecords::epoch_begin(int epoch, size_t first_sample) { epoch_start_ = std::chrono::steady_clock::now(); }

void RunRecords::epoch_end(int epoch) {
  train_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
}

void RunRecords::step_begin(const StepAt& at) {
  epoch_ = at.epoch;
  batch_ = at.batch;
  step_ = at.step;
  logged_ = at.logged;
  inspecting_ = !opts_.inspect_steps.empty() &&
                std::binary_search(opts_.inspect_steps.begin(), opts_.inspect_steps.end(), at.step);
  clock_.begin();
}

void RunRecords::begin(Stretch s) {
  if (s == Stretch::kRead) clock_.data_begin();
  if (s == Stretch::kExchange) clock_.comm_begin();
}

void RunRecords::end(Stretch s) {
  if (s == Stretch::kRead) clock_.data_done();
  if (s != Stretch::kExchange) return;
  clock_.comm_end();
  for (const AdasumCoefficients& c : adasum_trace_) adasum_.push_back({c.level, c.segment, c.a_coef, c.b_coef});
  adasum_trace_.clear();
}

void RunRecords::gradients_ready(const float* grads, const float* params) {
  clock_.compute_done();
  if (logged_ && !opts_.metrics.empty()) grad_norm_ = l2_norm(grads, Net::kNumParams);
  if (!inspecting_) return;
  local_grad_.assign(grads, grads + Net::kNumParams);
  params_before_.assign(params, params + Net::kNumParams);
  counter_.reset();
  adasum_.clear();
}

AllreduceObserver* RunRecords::allreduce_observer(AllreduceObserver* next) {
  if (!inspecting_) return next;
  counter_.set_next(next);
  return &counter_;
}

std::vector<AdasumCoefficients>* RunRecords::adasum_trace() { return inspecting_ ? &adasum_trace_ : nullptr; }

void RunRecords::step_end(const StepAt& at, const float* grads, float* params, float loss, int n) {
  clock_.end();
  ++steps_;
  samples_ += n;
  maybe_perturb(perturb_, rank_, step_, params);  // test hook (BARESGD_TEST_PERTURB)
  if (inspecting_) inspect(grads, params);
  if (check_sync_due(opts_.check_sync, step_)) check_sync(params);
  if (logged_ && !opts_.metrics.empty()) log_step(loss, n);
  inspecting_ = false;
}

std::vector<std::vector<AdasumLevelCoef>> RunRecords::gather_adasum() {
  // Fixed capacity: one entry per (level, layer); slot 0 carries the count in its level field.
  int levels = 0;
  while ((1 << levels) < size_) ++levels;
  const size_t cap = size_t(levels) * Net::kNumTensors;
  std::vector<AdasumLevelCoef> mine(cap + 1, AdasumLevelCoef{0, 0, 0, 0});
  const size_t count = std::min(cap, adasum_.size());
  mine[0].level = int(count);
  std::copy(adasum_.begin(), adasum_.begin() + long(count), mine.begin() + 1);
  std::vector<AdasumLevelCoef> all = allgather_of(comm_, mine);
  std::vector<std::vector<AdasumLevelCoef>> per_rank(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const AdasumLevelCoef* slot = all.data() + size_t(r) * (cap + 1);
    const size_t k = std::min(cap, size_t(std::max(0, slot[0].level)));
    per_rank[size_t(r)].assign(slot + 1, slot + 1 + k);
  }
  return per_rank;
}

void RunRecords::inspect(const float* grads, const float* params) {
  AllreduceBytes bytes = modelled_allreduce_bytes(backend_, facts_.algorithm, size_, rank_, Net::kNumParams,
                                                  facts_.elem_bytes, opts_.use_adasum);
  if (counter_.steps() > 0) {  // our own algorithm reported its sends and receives
    bytes.sent = counter_.sent();
    bytes.received = counter_.received();
    bytes.source = "observer";
    bytes.how =
        "counted from the " + std::to_string(counter_.steps()) + " steps of the " + facts_.algorithm + " allreduce";
    const AllreduceCost cost = allreduce_cost(parse_allreduce_algorithm(facts_.algorithm), size_, rank_,
                                              Net::kNumParams, facts_.elem_bytes, 0, 0);
    if (!cost.formula.empty()) bytes.how += "; closed form " + cost.formula;
  }
  const std::vector<LayerStats> all =
      allgather_of(comm_, layer_stats(local_grad_.data(), grads, params_before_.data(), params, bytes));
  std::vector<std::vector<AdasumLevelCoef>> coefs;
  if (opts_.use_adasum && size_ > 1) coefs = gather_adasum();
  if (!opts_.inspect_dump.empty()) dump_inspect_gradients(opts_.inspect_dump, step_, rank_, local_grad_.data(), grads);
  if (rank_ != 0) return;
  const InspectHeader h{step_, epoch_, batch_, size_, backend_, facts_.algorithm, bytes};
  std::string text = inspect_table(h, all) + adasum_lines(step_, coefs);
  if (opts_.use_adasum && size_ > 1 && adasum_lines(step_, coefs).empty())
    text += "inspect: step " + std::to_string(step_) + ": no Adasum coefficients were recorded at this step\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  if (!metrics_.is_open()) return;
  for (int r = 0; r < size_; ++r)
    for (int l = 0; l < Net::kNumTensors; ++l)
      metrics_.line(
          inspect_record(step_, r, Net::kParams[l].name, all[size_t(r) * Net::kNumTensors + l], bytes.source));
  for (size_t r = 0; r < coefs.size(); ++r)
    for (const AdasumLevelCoef& c : coefs[r]) metrics_.line(adasum_record(step_, int(r), c));
  metrics_.flush();
}

void RunRecords::check_sync(const float* params) {
  const int64_t t = timeline_traffic_begin();
  const std::vector<uint32_t> all = allgather_of(comm_, layer_checksums(params));
  timeline_traffic("check-sync allgather", t, all.size() * sizeof(uint32_t));
  const std::string message = divergence_message(step_, all, size_);
  if (!message.empty()) throw std::runtime_error(message);
  ++sync_checks_;
  last_sync_step_ = step_;
}

void RunRecords::log_step(float loss, int n) {
  const StepTimes& t = clock_.last();
  const int64_t bytes = size_ > 1 ? int64_t(Net::kNumParams * facts_.elem_bytes) : 0;
  const CommSample& x = last_exchange_sample();
  const StepRecord mine{double(loss),
                        grad_norm_,
                        t.data_s,
                        t.compute_s,
                        (x.end_ns - x.begin_ns) * 1e-9,
                        t.step_s,
                        t.step_s > 0 ? n / t.step_s : 0,
                        rank_,
                        bytes,
                        x.begin_ns - clock_offset_ns_,
                        x.end_ns - clock_offset_ns_,
                        x.on_cpu_ns,
                        x.run_delay_ns};
  const std::vector<StepRecord> all = allgather_of(comm_, std::vector<StepRecord>{mine});
  if (rank_ != 0) return;
  for (const std::string& line : step_records(StepPosition{epoch_, batch_, step_, facts_.lr}, all)) metrics_.line(line);
  metrics_.flush();
}

void RunRecords::test_end(int epoch, uint64_t steps, double loss, double accuracy) {
  ++epochs_;
  has_accuracy_ = true;
  accuracy_ = accuracy;
  if (!metrics_.is_open()) return;
  metrics_.line(test_record(epoch, steps, loss, accuracy));
  metrics_.flush();
}

void RunRecords::run_end() {
  double totals[3] = {train_s_, clock_.comm_total_s(), samples_};
  comm_.allreduce_sum(totals, 3);
  const RunSummary s = make_run_summary(size_, backend_, facts_.algorithm, epochs_, steps_, totals[0], totals[1],
                                        totals[2], has_accuracy_, accuracy_);
  if (rank_ != 0) return;
  if (sync_checks_ > 0)
    std::fprintf(stderr, "train: %s\n", sync_agreement_line(sync_checks_, last_sync_step_, size_).c_str());
  std::fprintf(stderr, "%s\n", summary_line(s).c_str());
  std::fflush(stderr);
  if (!metrics_.is_open()) return;
  metrics_.line(summary_record(s));
  metrics_.close();
}
