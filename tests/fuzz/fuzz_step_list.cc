// fuzz_step_list: libFuzzer target for --inspect's step-list parser (src/step_list.h).
//
// Input: the bytes as the flag's value. Contract checked: parse_step_list either returns or throws
// std::invalid_argument with a message; what it returns is non-empty, strictly ascending, within
// kMaxStepIndex, and exactly the comma-separated decimal items of the input (re-joining the sorted
// values parses back to the same list).
//
// Build: make fuzz (build-fuzz/fuzz_step_list); run: .ci/fuzz.sh
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/step_list.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<uint64_t> steps;
  try {
    steps = parse_step_list(text);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
    return 0;
  }
  FUZZ_CHECK(!steps.empty());
  FUZZ_CHECK(text.find_first_not_of("0123456789,") == std::string::npos);
  std::string joined;
  for (size_t i = 0; i < steps.size(); ++i) {
    FUZZ_CHECK(steps[i] <= kMaxStepIndex);
    if (i > 0) FUZZ_CHECK(steps[i - 1] < steps[i]);
    joined += (i ? "," : "") + std::to_string(steps[i]);
  }
  size_t commas = 0;
  for (char c : text) commas += c == ',';
  FUZZ_CHECK(commas + 1 == steps.size());
  FUZZ_CHECK(parse_step_list(joined) == steps);
  return 0;
}
