// step_observer: StepObservers, several observers as one (see step_observer.h).
#include "src/step_observer.h"

#include <utility>

#include "src/comm_split.h"

void StepObservers::add(std::unique_ptr<StepObserver> observer) { all_.push_back(std::move(observer)); }

void StepObservers::run_begin(const RunShape& shape) {
  for (auto& o : all_) o->run_begin(shape);
}

void StepObservers::epoch_begin(int epoch, size_t first_sample) {
  for (auto& o : all_) o->epoch_begin(epoch, first_sample);
}

void StepObservers::step_begin(const StepAt& at) {
  for (auto& o : all_) o->step_begin(at);
}

void StepObservers::begin(Stretch s) {
  for (auto& o : all_) o->begin(s);
  if (s == Stretch::kExchange) exchange_sample_begin();  // inside every observer's own stretch
}

void StepObservers::end(Stretch s) {
  if (s == Stretch::kExchange) exchange_sample_end();
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) (*o)->end(s);
}

void StepObservers::gradients_ready(const float* grads, const float* params) {
  for (auto& o : all_) o->gradients_ready(grads, params);
}

AllreduceObserver* StepObservers::allreduce_observer(AllreduceObserver* next) {
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) next = (*o)->allreduce_observer(next);
  return next;
}

std::vector<AdasumCoefficients>* StepObservers::adasum_trace() {
  for (auto& o : all_)
    if (auto* trace = o->adasum_trace()) return trace;
  return nullptr;
}

void StepObservers::step_end(const StepAt& at, const float* grads, float* params, float loss, int n) {
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) (*o)->step_end(at, grads, params, loss, n);
}

void StepObservers::epoch_end(int epoch) {
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) (*o)->epoch_end(epoch);
}

void StepObservers::test_begin(uint64_t step) {
  for (auto& o : all_) o->test_begin(step);
}

void StepObservers::test_end(int epoch, uint64_t step, double loss, double accuracy) {
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) (*o)->test_end(epoch, step, loss, accuracy);
}

void StepObservers::run_end() {
  for (auto o = all_.rbegin(); o != all_.rend(); ++o) (*o)->run_end();
}

OverlapObserver* StepObservers::overlap_observer() {
  for (auto& o : all_)
    if (auto* observer = o->overlap_observer()) return observer;
  return nullptr;
}
