// shared_failure: rank 0's error printed before the others learn of it (see shared_failure.h).
#include "src/shared_failure.h"

#include <cstdio>

void print_rank0_error_now(const std::string& error) {
  std::fflush(stdout);
  std::fprintf(stderr, "train: error: %s\n", error.c_str());
  std::fflush(stderr);
}

void throw_shared_failure(int rank, const std::string& rank0_error, const std::string& peers_message) {
  if (rank == 0) throw PrintedError(rank0_error);
  throw std::runtime_error(peers_message);
}
