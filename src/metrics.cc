// metrics: builds the --metrics records and writes them, one per line.
#include "src/metrics.h"
#include "src/safe_file.h"

#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "comm/library_versions.h"
#include "src/comm_split.h"
#include "src/json_line.h"
#include "src/version.h"

void fill_versions(MetricsHeader* h, const std::string& backend) {
  h->baresgd = kBaresgdVersion;
  const char* config = openblas_get_config();
  h->openblas = config ? config : "unknown";
  h->gloo = built_with_gloo() ? "yes" : "no";
  h->mpi = backend == "mpi" ? mpi_library_version() : (built_with_mpi() ? "yes" : "no");
}

std::string options_json(const Options& o) {
  std::vector<std::string> steps;
  for (uint64_t s : o.inspect_steps) steps.push_back(std::to_string(s));
  std::string inspect = "[";
  for (size_t i = 0; i < steps.size(); ++i) inspect += (i ? "," : "") + steps[i];
  inspect += "]";
  JsonLine j;
  j.integer("batch_size", o.batch_size)
      .integer("test_batch_size", o.test_batch_size)
      .integer("epochs", o.epochs)
      .num("lr", o.lr)
      .num("momentum", o.momentum)
      .boolean("no_cuda", o.no_cuda)
      .integer("seed", o.seed)
      .integer("log_interval", o.log_interval)
      .boolean("fp16_allreduce", o.fp16_allreduce)
      .boolean("use_mixed_precision", o.use_mixed_precision)
      .boolean("use_adasum", o.use_adasum)
      .num("gradient_predivide_factor", o.gradient_predivide_factor)
      .str("data_dir", o.data_dir)
      .integer("num_proc", o.num_proc)
      .str("hosts", o.hosts)
      .str("communication", o.communication)
      .str("backend", o.backend)
      .str("rendezvous_dir", o.rendezvous_dir)
      .str("network_interface", o.network_interface)
      .num("start_timeout", o.start_timeout)
      .num("comm_timeout", o.comm_timeout)
      .str("checkpoint_dir", o.checkpoint_dir)
      .integer("checkpoint_every", o.checkpoint_every)
      .boolean("resume", o.resume)
      .boolean("no_dropout", o.no_dropout)
      .integer("max_steps", o.max_steps)
      .str("dump_params", o.dump_params)
      .integer("threads", o.threads)
      .str("metrics", o.metrics)
      .raw("inspect", inspect)
      .str("inspect_dump", o.inspect_dump)
      .integer("check_sync", o.check_sync)
      .str("allreduce", o.allreduce)
      .str("straggler", o.straggler)
      .num("link_delay", o.link_delay_ms)
      .str("link_bandwidth", o.link_bandwidth);
  return j.object();
}

// The what-if switches in effect (emulations: docs/internals.md).
std::string what_if_json(const MetricsHeader& h) {
  JsonLine j;
  j.integer("straggler_rank", h.straggler_rank)
      .num("link_delay_ms", h.link_delay_ms)
      .num("link_bytes_per_s", h.link_bytes_per_s)
      .str("link", h.link_delay_ms > 0 || h.link_bytes_per_s > 0 ? "emulated (our algorithms' messages)" : "real");
  return j.object();
}

std::string header_record(const MetricsHeader& h, const Options& o) {
  JsonLine versions;
  versions.str("baresgd", h.baresgd).str("openblas", h.openblas).str("gloo", h.gloo).str("mpi", h.mpi);
  JsonLine j;
  j.str("type", "header")
      .str("format", "baresgd-metrics")
      .integer("version", 1)
      .integer("world_size", h.world_size)
      .str("backend", h.backend)
      .str("algorithm", h.algorithm)
      .strings("hosts", h.hosts)
      .raw("versions", versions.object())
      .raw("flags", options_json(o))
      .boolean("oversubscribed", h.oversubscribed)
      .raw("what_if", what_if_json(h));
  return j.object();
}

std::vector<std::string> step_records(const StepPosition& p, const std::vector<StepRecord>& ranks) {
  int64_t first = ranks.empty() ? 0 : ranks[0].comm_begin_ns;
  std::vector<CommSample> samples;
  for (const StepRecord& r : ranks) {
    first = std::min(first, r.comm_begin_ns);
    samples.push_back(CommSample{r.comm_begin_ns, r.comm_end_ns, r.on_cpu_ns, r.run_delay_ns});
  }
  const std::vector<CommSplit> split = split_exchange(samples);
  std::vector<std::string> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const StepRecord& r = ranks[i];
    const CommSplit& c = split[i];
    JsonLine j;
    j.str("type", "step")
        .integer("epoch", p.epoch)
        .integer("batch", (long long)p.batch)
        .integer("step", (long long)p.step)
        .integer("rank", r.rank)
        .num("loss", r.loss)
        .num("lr", p.lr)
        .num("grad_norm", r.grad_norm)
        .num("data_s", r.data_s)
        .num("compute_s", r.compute_s)
        .num("comm_s", r.comm_s)
        .num("wait_s", c.wait_ns * 1e-9)
        .num("transfer_s", c.transfer_ns * 1e-9)
        .num("descheduled_s", c.descheduled_ns * 1e-9)
        .num("on_cpu_s", c.on_cpu_ns * 1e-9)
        .num("run_delay_s", c.run_delay_ns * 1e-9)
        .num("arrive_s", (r.comm_begin_ns - first) * 1e-9)
        .num("step_s", r.step_s)
        .num("samples_per_s", r.samples_per_s)
        .integer("allreduce_bytes", r.allreduce_bytes);
    out.push_back(j.object());
  }
  return out;
}

std::string test_record(int epoch, uint64_t steps, double loss, double accuracy) {
  JsonLine j;
  j.str("type", "test")
      .integer("epoch", epoch)
      .integer("step", (long long)steps)
      .num("loss", loss)
      .num("accuracy", accuracy);
  return j.object();
}

std::string inspect_record(uint64_t step, int rank, const char* layer, const LayerStats& s,
                           const std::string& bytes_source) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", s.param_checksum);
  JsonLine j;
  j.str("type", "inspect")
      .integer("step", (long long)step)
      .integer("rank", rank)
      .str("layer", layer)
      .num("local_grad_norm", s.local_grad_norm)
      .num("cosine_to_average", s.cosine_to_average)
      .num("average_grad_norm", s.average_grad_norm)
      .num("update_ratio", s.update_ratio)
      .integer("bytes_sent", (long long)s.bytes_sent)
      .integer("bytes_received", (long long)s.bytes_received)
      .str("param_checksum", crc)
      .str("bytes_source", bytes_source);
  return j.object();
}

std::string adasum_record(uint64_t step, int rank, const AdasumLevelCoef& c) {
  const bool named = c.segment >= 0 && c.segment < Net::kNumTensors;
  JsonLine j;
  j.str("type", "adasum")
      .integer("step", (long long)step)
      .integer("rank", rank)
      .integer("level", c.level)
      .str("layer", named ? Net::kParams[c.segment].name : "segment " + std::to_string(c.segment))
      .num("a_coef", c.a_coef)
      .num("b_coef", c.b_coef);
  return j.object();
}

std::string summary_record(const RunSummary& s) {
  JsonLine j;
  j.str("type", "summary")
      .integer("world_size", s.world_size)
      .str("backend", s.backend)
      .str("algorithm", s.algorithm)
      .integer("epochs", s.epochs)
      .num("train_s", s.train_s)
      .num("samples_per_s", s.samples_per_s)
      .num("comm_share", s.comm_share);
  if (s.has_accuracy)
    j.num("test_accuracy", s.test_accuracy);
  else
    j.null("test_accuracy");
  j.integer("steps", (long long)s.steps);
  return j.object();
}

MetricsFile::~MetricsFile() {
  if (f_) std::fclose(f_);
}

void MetricsFile::open(const std::string& path) {
  path_ = path;
  f_ = create_output_stream(path, "--metrics file");  // no symlink followed (src/safe_file.h)
}

void MetricsFile::line(const std::string& record) {
  if (!f_) return;
  std::fputs(record.c_str(), f_);
  std::fputc('\n', f_);
}

void MetricsFile::flush() {
  if (f_ && std::fflush(f_) != 0)
    throw std::runtime_error("--metrics " + path_ + ": write failed: " + std::strerror(errno));
}

void MetricsFile::close() {
  if (!f_) return;
  std::FILE* f = f_;
  f_ = nullptr;
  const bool bad = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || bad)
    throw std::runtime_error("--metrics " + path_ + ": write failed: " + std::strerror(errno));
}
