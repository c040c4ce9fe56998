// allreduce_names: the --allreduce names and which backend can run which algorithm (pure, no
// communication, so ./train's flag parser and its fuzz target link it alone).
#include <stdexcept>
#include <string>

#include "comm/allreduce.h"

namespace {

struct Named {
  AllreduceAlgorithm algorithm;
  const char* name;
};
constexpr Named kNames[] = {
    {AllreduceAlgorithm::kAuto, "auto"}, {AllreduceAlgorithm::kDirect, "direct"},
    {AllreduceAlgorithm::kRing, "ring"}, {AllreduceAlgorithm::kHalvingDoubling, "halving-doubling"},
    {AllreduceAlgorithm::kGloo, "gloo"}, {AllreduceAlgorithm::kMpi, "mpi"},
};

}  // namespace

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
  std::string valid;
  for (const Named& n : kNames) {
    if (name == n.name) return n.algorithm;
    valid += (valid.empty() ? "" : ", ") + std::string(n.name);
  }
  throw std::invalid_argument("unknown --allreduce '" + name + "' (valid: " + valid + ")");
}

const char* allreduce_algorithm_name(AllreduceAlgorithm a) {
  for (const Named& n : kNames)
    if (n.algorithm == a) return n.name;
  return "?";
}

// Ours (direct, ring, halving-doubling) run over any backend's exchange at any world size (the
// halving-doubling folds the ranks beyond a power of two); the libraries' own need their library.
std::string allreduce_unsupported_reason(AllreduceAlgorithm a, const std::string& backend, int world_size) {
  const char* library = a == AllreduceAlgorithm::kGloo ? "gloo" : a == AllreduceAlgorithm::kMpi ? "mpi" : nullptr;
  if (!library || backend == library) return "";
  return std::string("--allreduce ") + library + " runs " +
         (a == AllreduceAlgorithm::kGloo ? "Gloo's own allreduce" : "MPI_Allreduce") + " and needs the " + library +
         " backend, but this job of " + std::to_string(world_size) + " rank" + (world_size == 1 ? "" : "s") +
         " runs on the " + backend + " backend";
}
