// straggler: the --straggler sleep (see straggler.h).
#include "src/straggler.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "src/timeline.h"

namespace {

class StragglerSleep : public StepObserver {
 public:
  explicit StragglerSleep(const StragglerSpec& spec) : spec_(spec) {}
  void step_begin(const StepAt&) override { step_began_ = Clock::now(); }
  // After backward, before the exchange: sleep MS, or (F - 1) x the compute so far.
  void gradients_ready(const float*, const float*) override {
    const auto computed = Clock::now() - step_began_;
    const auto sleep = spec_.factor > 0 ? std::chrono::duration<double>(computed) * (spec_.factor - 1)
                                        : std::chrono::duration<double>(spec_.sleep_ms / 1000.0);
    const int64_t slice = timeline_begin();
    std::this_thread::sleep_for(sleep);
    timeline_end(TimelineKind::kStragglerSleep, slice);
  }

 private:
  using Clock = std::chrono::steady_clock;
  StragglerSpec spec_;
  Clock::time_point step_began_;
};

}  // namespace

std::unique_ptr<StepObserver> make_straggler(const std::string& text, const StragglerSpec& spec,
                                             const Communicator& comm) {
  if (spec.rank >= comm.size())
    throw std::runtime_error("--straggler " + text + ": rank " + std::to_string(spec.rank) + " is not in this " +
                             std::to_string(comm.size()) + "-rank job (ranks 0.." + std::to_string(comm.size() - 1) +
                             ")");
  if (comm.rank() != spec.rank) return std::make_unique<StepObserver>();
  return std::make_unique<StragglerSleep>(spec);
}
