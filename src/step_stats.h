// step_stats: one training step's seconds split into data (reading the batch: with several compute
// threads, slice 0's share, read on the calling thread while the others read theirs), compute
// (dropout masks, forward, backward), comm (the gradient averaging) and the whole step, on steady_clock.
// The split is read only when `detailed` (--metrics); the comm time is always taken (two clock
// reads per step) because the end-of-run summary reports the share of time in communication.
#pragma once
#include <chrono>

struct StepTimes {
  double data_s = 0, compute_s = 0, comm_s = 0, step_s = 0;
};

class StepClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StepClock(bool detailed) : detailed_(detailed) {}
  bool detailed() const { return detailed_; }

  void begin() {
    last_.comm_s = 0;
    if (detailed_) begin_ = Clock::now();
  }
  // Around slice 0's reading of its samples (inside forward, on the calling thread).
  void data_begin() {
    if (detailed_) data_begin_ = Clock::now();
  }
  void data_done() {
    if (detailed_) data_ = Clock::now();
  }
  void compute_done() {
    if (detailed_) compute_ = Clock::now();
  }
  void comm_begin() { comm_ = Clock::now(); }
  void comm_end() {
    last_.comm_s = seconds(comm_, Clock::now());
    comm_total_s_ += last_.comm_s;
  }
  void end() {
    if (!detailed_) return;
    last_.data_s = seconds(data_begin_, data_);
    last_.compute_s = seconds(begin_, compute_) - last_.data_s;
    last_.step_s = seconds(begin_, Clock::now());
  }
  const StepTimes& last() const { return last_; }  // data/compute/step only when detailed
  double comm_total_s() const { return comm_total_s_; }

 private:
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  bool detailed_;
  Clock::time_point begin_, data_begin_, data_, compute_, comm_;
  StepTimes last_;
  double comm_total_s_ = 0;
};
