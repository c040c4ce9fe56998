// run_summary: the end-of-run line rank 0 prints on stderr after every run, e.g.
//   train: summary: world_size=4 backend=gloo algorithm=auto epochs=1 steps=235 train_s=2.41
//          epoch_s=2.41 samples_per_s=24896 comm_share=12.0% test_accuracy=94.12%
// (one line). Fields:
//   world_size, backend, algorithm  the job (algorithm: the gradient allreduce, "auto" = the
//                                   backend's default)
//   epochs        epochs whose test pass ran in this run
//   steps         optimizer steps taken in this run
//   train_s       seconds in the training loops (test passes excluded), mean over ranks
//   epoch_s       train_s / epochs ("n/a" when no epoch finished, e.g. --max-steps)
//   samples_per_s training samples of all ranks per second of train_s
//   comm_share    time in the gradient averaging / train_s, over all ranks
//   test_accuracy the last test pass's accuracy ("n/a" when none ran)
#pragma once
#include <cstdint>
#include <string>

struct RunSummary {
  int world_size = 1;
  std::string backend, algorithm;
  int epochs = 0;
  uint64_t steps = 0;
  double train_s = 0, samples_per_s = 0, comm_share = 0;
  bool has_accuracy = false;
  double test_accuracy = 0;  // in [0, 1]
};

// totals over ranks: the sums of train_s, comm_s and samples of every rank.
RunSummary make_run_summary(int world_size, const std::string& backend, const std::string& algorithm, int epochs,
                            uint64_t steps, double sum_train_s, double sum_comm_s, double sum_samples,
                            bool has_accuracy, double test_accuracy);
// "train: summary: ..." without the newline.
std::string summary_line(const RunSummary& s);
