// config_check: Horovod's refusals for --use-adasum, checked before training starts.
#include "src/config_check.h"

#include <cstdio>
#include <stdexcept>
#include <string>

void check_training_configuration(const Options& opts, int world_size) {
  if (!opts.use_adasum) return;
  if (opts.gradient_predivide_factor != 1.0) {
    char factor[32];
    std::snprintf(factor, sizeof factor, "%g", opts.gradient_predivide_factor);
    throw std::invalid_argument(std::string("--gradient-predivide-factor ") + factor +
                                " cannot be used with --use-adasum (Horovod: gradient_predivide_factor is "
                                "only supported with op=Average)");
  }
  if (world_size < 1 || (world_size & (world_size - 1)) != 0)
    throw std::invalid_argument(
        "--use-adasum needs a power-of-two number of ranks (as Horovod's Adasum), but "
        "this job has " +
        std::to_string(world_size) + "; use 1, 2, 4, 8, ... ranks or drop --use-adasum");
}
