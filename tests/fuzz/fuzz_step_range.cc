// fuzz_step_range: libFuzzer target for --timeline-steps' parser (src/step_range.h).
//
// Input: the bytes as the flag's value.
// Contract checked: parse_step_range returns true exactly for "A" or "A-B" with A, B decimal
// digit strings (<= 2^62) and A <= B, and then the range holds A and B and nothing outside; on
// false it leaves *out untouched. Rebuilding the text from the range and parsing it again gives
// the same range.
//
// Build: make fuzz (build-fuzz/fuzz_step_range); run: .ci/fuzz.sh
#include <cstdint>
#include <string>

#include "src/step_range.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  StepRange r{-7, -9};
  if (!parse_step_range(text, &r)) {
    FUZZ_CHECK(r.first == -7 && r.last == -9);
    return 0;
  }
  size_t dashes = 0;
  for (char c : text) {
    FUZZ_CHECK((c >= '0' && c <= '9') || c == '-');
    dashes += c == '-';
  }
  FUZZ_CHECK(dashes <= 1);
  FUZZ_CHECK(r.first >= 0 && r.last >= r.first && r.last <= (1LL << 62));
  FUZZ_CHECK(r.contains(r.first) && r.contains(r.last));
  FUZZ_CHECK(!r.contains(r.first - 1) && !r.contains(r.last + 1));
  FUZZ_CHECK(dashes == 1 || r.first == r.last);
  StepRange again;
  FUZZ_CHECK(parse_step_range(std::to_string(r.first) + "-" + std::to_string(r.last), &again));
  FUZZ_CHECK(again.first == r.first && again.last == r.last);
  return 0;
}
