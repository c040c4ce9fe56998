// sample_record: ./train --sample-record FILE — which samples made each optimizer step, so a test
// (or a curious user) can check that an epoch, interrupted and continued on another world size,
// saw every sample once. Rank 0 writes one line per step and rank, "step epoch rank index...",
// for every rank (each rank's indices are its DistributedSampler's, which any rank can deal).
// Opened for a resumed run, the file first loses the lines of the steps from the resume step on:
// that work is redone, so the file always lists the samples that made the parameters.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "src/sampler.h"
#include "src/step_observer.h"

class SampleRecord {
 public:
  // Truncates FILE, or with resume_step > 0 keeps its lines of steps before it. Throws
  // std::runtime_error naming FILE when it cannot be read or written.
  SampleRecord(const std::string& path, uint64_t resume_step);
  ~SampleRecord();
  SampleRecord(const SampleRecord&) = delete;
  SampleRecord& operator=(const SampleRecord&) = delete;

  // The epoch's samplers for every rank, as run_training sets its own.
  void begin_epoch(size_t dataset_size, int world, uint64_t epoch, size_t first_sample);
  // Step `step` trained batch b (batch_size samples per rank, fewer in the last) on every rank.
  void record_step(uint64_t step, int epoch, size_t b, size_t batch_size);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::vector<DistributedSampler> ranks_;
};

// --sample-record as the Trainer's observer (rank 0 only): each epoch's samplers, each step's line.
class SampleRecorder : public StepObserver {
 public:
  // dataset_size: the training split's; world: the ranks; batch_size: --batch-size.
  SampleRecorder(const std::string& path, uint64_t resume_step, size_t dataset_size, int world, int batch_size)
      : record_(path, resume_step), dataset_size_(dataset_size), world_(world), batch_size_(size_t(batch_size)) {}
  void epoch_begin(int epoch, size_t first_sample) override {
    record_.begin_epoch(dataset_size_, world_, uint64_t(epoch), first_sample);
  }
  void step_begin(const StepAt& at) override { record_.record_step(at.step, at.epoch, at.batch, batch_size_); }

 private:
  SampleRecord record_;
  size_t dataset_size_;
  int world_;
  size_t batch_size_;
};

// The step number of a record line ("12 1 0 ..."), or -1 when the line does not start with one.
long long sample_record_step(const std::string& line);
