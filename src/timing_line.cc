// timing_line: BARESGD_TIMING's per-rank line (see timing_line.h).
#include "src/timing_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

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

}  // namespace

bool timing_enabled() {
  const char* timing_env = std::getenv("BARESGD_TIMING");
  return timing_env && std::string(timing_env) == "1";
}

void TimingLine::run_begin(const RunShape& shape) {
  threads_ = shape.compute_threads;
  threads_rule_ = shape.threads_rule;
  buckets_ = shape.bucket_layers.size();
}

void TimingLine::epoch_begin(int epoch, size_t first_sample) {
  epoch_ = Clock::now();
  if (startup_s_ < 0) startup_s_ = process_seconds();
}

void TimingLine::epoch_end(int epoch) { train_s_ += since(epoch_); }

void TimingLine::begin(Stretch s) {
  if (s == Stretch::kExchange) exchange_ = Clock::now();
}

void TimingLine::end(Stretch s) {
  if (s == Stretch::kExchange) comm_s_ += since(exchange_);
}

void TimingLine::test_begin(uint64_t step) { test_ = Clock::now(); }

void TimingLine::test_end(int epoch, uint64_t step, double loss, double accuracy) { test_s_ += since(test_); }

void TimingLine::run_end() {
  std::fprintf(stderr,
               "timing: rank=%d startup_s=%.4f train_s=%.4f test_s=%.4f comm_s=%.4f overlap_buckets=%zu "
               "lane_rounds=%llu threads=%d (%s)\n",
               comm_.rank(), startup_s_, train_s_, test_s_, comm_s_, buckets_,
               static_cast<unsigned long long>(comm_.sync_lane_rounds()), threads_, threads_rule_);
}
