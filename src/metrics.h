// metrics: the --metrics JSON Lines records (the format ./report reads; one object per line,
// fields in the order of the format note): header, step (one per rank per logged step, with
// wait_s), test, inspect, adasum and summary; and the file rank 0 writes them to.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "src/inspect.h"
#include "src/options.h"
#include "src/run_summary.h"

struct MetricsHeader {
  int world_size = 1;
  std::string backend, algorithm;
  std::vector<std::string> hosts;            // hosts[r] = rank r's host
  std::string baresgd, openblas, gloo, mpi;  // versions: gloo "yes"/"no"; mpi its version or "yes"/"no"
};
// The versions of this build: kBaresgdVersion, openblas_get_config(), Gloo built in, and MPI's
// library version when backend is "mpi" (else "yes"/"no": built in or not).
void fill_versions(MetricsHeader* h, const std::string& backend);

std::string header_record(const MetricsHeader& h, const Options& o);
// Every ./train option, in Options order, as one JSON object.
std::string options_json(const Options& o);

// One rank's logged step as gathered from every rank (fixed size, raw bytes).
struct StepRecord {
  double loss, grad_norm, data_s, compute_s, comm_s, step_s, samples_per_s;
  int64_t rank, allreduce_bytes;
};
struct StepPosition {
  int epoch;
  uint64_t batch, step;  // batch in the epoch; 0-based optimizer step
  double lr;
};
// One line per rank; wait_s = comm_s - min over ranks of comm_s.
std::vector<std::string> step_records(const StepPosition& p, const std::vector<StepRecord>& ranks);
// steps: optimizer steps taken so far; accuracy in [0, 1].
std::string test_record(int epoch, uint64_t steps, double loss, double accuracy);
// bytes_source ("model"/"observer") follows the format's fields (readers ignore unknown ones).
std::string inspect_record(uint64_t step, int rank, const char* layer, const LayerStats& s,
                           const std::string& bytes_source);
std::string adasum_record(uint64_t step, int rank, const AdasumLevelCoef& c);
// test_accuracy is null when no test pass ran.
std::string summary_record(const RunSummary& s);

// The metrics file: open() creates/truncates it (throws std::runtime_error("--metrics PATH:
// cannot write: <reason>")), line() appends one record, close() flushes and reports a failed write.
class MetricsFile {
 public:
  MetricsFile() = default;
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  ~MetricsFile();
  void open(const std::string& path);
  bool is_open() const { return f_ != nullptr; }
  void line(const std::string& record);
  void flush();  // after each group of records, so a killed job leaves whole lines
  void close();

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};
