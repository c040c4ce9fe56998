// run_summary: the end-of-run numbers from the ranks' totals, and their one-line form.
#include "src/run_summary.h"

#include <cstdio>

RunSummary make_run_summary(int world_size, const std::string& backend, const std::string& algorithm, int epochs,
                            uint64_t steps, double sum_train_s, double sum_comm_s, double sum_samples,
                            bool has_accuracy, double test_accuracy) {
  RunSummary s;
  s.world_size = world_size;
  s.backend = backend;
  s.algorithm = algorithm;
  s.epochs = epochs;
  s.steps = steps;
  s.train_s = world_size > 0 ? sum_train_s / world_size : 0;
  s.samples_per_s = s.train_s > 0 ? sum_samples / s.train_s : 0;
  s.comm_share = sum_train_s > 0 ? sum_comm_s / sum_train_s : 0;
  s.has_accuracy = has_accuracy;
  s.test_accuracy = test_accuracy;
  return s;
}

std::string summary_line(const RunSummary& s) {
  char epoch_s[32] = "n/a", acc[32] = "n/a";
  if (s.epochs > 0) std::snprintf(epoch_s, sizeof epoch_s, "%.2f", s.train_s / s.epochs);
  if (s.has_accuracy) std::snprintf(acc, sizeof acc, "%.2f%%", 100.0 * s.test_accuracy);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "train: summary: world_size=%d backend=%s algorithm=%s epochs=%d steps=%llu train_s=%.2f "
                "epoch_s=%s samples_per_s=%.0f comm_share=%.1f%% test_accuracy=%s",
                s.world_size, s.backend.c_str(), s.algorithm.c_str(), s.epochs, (unsigned long long)s.steps, s.train_s,
                epoch_s, s.samples_per_s, 100.0 * s.comm_share, acc);
  return buf;
}
