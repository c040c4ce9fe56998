// oversubscription: the trainer's oversubscription line (see oversubscription.h).
#include "src/oversubscription.h"

std::string trainer_oversubscribed_line(int local_size, int local_rank, int host_cpus, const std::string& yield_line) {
  if (local_size <= host_cpus || local_rank != 0) return "";
  if (!yield_line.empty()) return yield_line + "; " + oversubscribed_consequence();
  return std::to_string(local_size) + " ranks on this host's " + std::to_string(host_cpus) +
         (host_cpus == 1 ? " CPU: " : " CPUs: ") + oversubscribed_consequence();
}
