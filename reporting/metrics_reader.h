// metrics_reader: the --metrics JSON Lines file (docs/metrics.md) as typed records. Pure parser
// (parse_metrics_text) with a thin file shell (read_metrics_file). Every error is a MetricsError
// with one line naming the file and, for a bad record, its line number: "FILE:LINE: reason".
// Unknown fields and unknown record types are ignored, as the format says.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct MetricsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ReportHeader {
  int version = 0;
  int world_size = 0;
  std::string backend, algorithm;
  std::vector<std::string> hosts;                             // hosts[r] = rank r's host
  std::vector<std::pair<std::string, std::string>> versions;  // name -> value as JSON text
  std::vector<std::pair<std::string, std::string>> flags;     // name -> value as JSON text
  // Some host ran more ranks than CPUs: times include waiting for a CPU (absent: false).
  bool oversubscribed = false;
  // The what-if switches ("what_if"; absent: off): --straggler's rank, --link-delay, --link-bandwidth.
  int straggler_rank = -1;
  double link_delay_ms = 0, link_bytes_per_s = 0;
};

struct ReportStep {
  int epoch = 0, batch = 0, step = 0, rank = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double data_s = 0, compute_s = 0, comm_s = 0, wait_s = 0, step_s = 0;
  // comm_s's split (src/comm_split.h; a file from before it: transfer = comm - wait, the rest 0),
  // the exchange's CPU clocks, and this rank's arrival after the first rank's.
  double transfer_s = 0, descheduled_s = 0, on_cpu_s = 0, run_delay_s = 0, arrive_s = 0;
  bool has_arrival = false;  // arrive_s was recorded
  double samples_per_s = 0, allreduce_bytes = 0;
};

struct TestRecord {
  int epoch = 0, step = 0;
  double loss = 0, accuracy = 0;  // accuracy in [0,1]
};

struct InspectRecord {
  int step = 0, rank = 0;
  std::string layer;
  double local_grad_norm = 0, cosine_to_average = 0, average_grad_norm = 0, update_ratio = 0;
  double bytes_sent = 0, bytes_received = 0;
  std::string param_checksum;  // 8 hex digits
};

struct AdasumRecord {
  int step = 0, rank = 0, level = 0;
  std::string layer;
  double a_coef = 0, b_coef = 0;
};

struct SummaryRecord {
  int world_size = 0, epochs = 0;
  std::string backend, algorithm;
  double train_s = 0, samples_per_s = 0, comm_share = 0, test_accuracy = 0;
};

struct Metrics {
  ReportHeader header;
  std::vector<ReportStep> steps;
  std::vector<TestRecord> tests;
  std::vector<InspectRecord> inspects;
  std::vector<AdasumRecord> adasums;
  bool has_summary = false;
  SummaryRecord summary;
  std::vector<std::string> warnings;  // e.g. a last line cut short by a killed run (ignored)
};

// Parses the whole file's text; filename is only used in messages. A first line that is not our
// header is "FILE: not a baresgd metrics file (first line is not its header)". A last line with
// no newline that does not parse is taken as cut short by a killed run: skipped with a warning.
Metrics parse_metrics_text(const std::string& text, const std::string& filename);

// Reads path and parses it; an unreadable file is "cannot read PATH: reason".
Metrics read_metrics_file(const std::string& path);
