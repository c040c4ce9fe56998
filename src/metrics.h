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
  std::vector<std::string> hosts;  // hosts[r] = rank r's host
  // Some host runs more ranks x compute threads than it has CPUs: times include waiting for one.
  bool oversubscribed = false;
  double link_delay_ms = 0, link_bytes_per_s = 0;  // --link-delay, --link-bandwidth (0: off)
  int straggler_rank = -1;                         // --straggler's rank (-1: off)
  std::string baresgd, openblas, gloo, mpi;        // versions: gloo "yes"/"no"; mpi its version or "yes"/"no"
};
// The versions of this build: kBaresgdVersion, openblas_get_config(), Gloo built in, and MPI's
// library version when backend is "mpi" (else "yes"/"no": built in or not).
void fill_versions(MetricsHeader* h, const std::string& backend);

std::string header_record(const MetricsHeader& h, const Options& o);
// Every ./train option, in Options order, as one JSON object.
std::string options_json(const Options& o);

// One rank's logged step as gathered from every rank (fixed size, raw bytes). The exchange's
// begin and end are on rank 0's clock (src/comm_split.h), its CPU clocks the thread's.
struct StepRecord {
  double loss, grad_norm, data_s, compute_s, comm_s, step_s, samples_per_s;
  int64_t rank, allreduce_bytes;
  int64_t comm_begin_ns, comm_end_ns, on_cpu_ns, run_delay_ns;
};
struct StepPosition {
  int epoch;
  uint64_t batch, step;  // batch in the epoch; 0-based optimizer step
  double lr;
};
// One line per rank. comm_s splits into wait_s, transfer_s and descheduled_s by split_comm
// (src/comm_split.h) with the last rank's arrival; on_cpu_s is the exchange's CPU time, arrive_s
// this rank's arrival after the first rank's.
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
