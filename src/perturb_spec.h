// perturb_spec: the test-only hook that proves --check-sync catches a divergence. With
//   BARESGD_TEST_PERTURB="rank=R,step=S[,layer=NAME]"
// rank R adds 1e-3 to the first parameter of layer NAME (default fc1.weight) right after its
// optimizer step S (0-based), so its parameters no longer equal the other ranks'. Tests only.
#pragma once
#include <cstdint>
#include <string>

struct PerturbSpec {
  bool active = false;
  int rank = 0;
  uint64_t step = 0;
  std::string layer = "fc1.weight";
};

// Parses the variable's value ("" -> inactive): comma-separated key=value with keys rank and step
// (required, decimal) and layer (optional), each once, nothing else. Throws std::invalid_argument
// with a message starting "BARESGD_TEST_PERTURB: ".
PerturbSpec parse_perturb_spec(const std::string& text);
