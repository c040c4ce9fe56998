// config_check: the flag combinations Horovod refuses, checked once on every rank before
// training starts (before any collective), whatever the world size.
#pragma once
#include "src/options.h"

// Throws std::invalid_argument with one line naming the flags when opts cannot run on
// world_size ranks:
//   --use-adasum on a world that is not a power of two (horovod/torch/mpi_ops.py:
//     "Running Adasum with non-power of 2 ranks is not supported yet.");
//   --use-adasum with --gradient-predivide-factor != 1 (horovod/torch/optimizer.py:
//     "gradient_predivide_factor not supported with op != Average", raised at any size).
void check_training_configuration(const Options& opts, int world_size);
