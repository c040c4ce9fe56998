// straggler: --straggler RANK:MS (or RANK:xF), a what-if a learner turns without root: rank RANK
// sleeps after backward in every train step, before the gradient exchange, so its compute is
// slower and every other rank waits for it there. The sleep counts as that rank's compute in
// --metrics and is its own "straggler sleep" slice on --timeline.
#pragma once
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "src/step_observer.h"
#include "src/what_if_spec.h"

// The observer that sleeps on rank spec.rank (nothing on the others). Throws std::runtime_error
// "--straggler TEXT: rank R is not in this W-rank job (ranks 0..W-1)" when the rank is not one.
std::unique_ptr<StepObserver> make_straggler(const std::string& text, const StragglerSpec& spec,
                                             const Communicator& comm);
