// fuzz_test_pause: libFuzzer target for the BARESGD_TEST_STOP_AT parser (src/stop_signal.h).
//
// Input: the bytes as the variable's value. Contract checked: parse_test_pause returns false and
// leaves its result inactive, or true with an active result whose rank and step are the two
// numbers of "RANK:STEP" (in range, printed back the same).
//
// Build: make fuzz (build-fuzz/fuzz_test_pause); run: .ci/fuzz.sh
#include <cstdint>
#include <string>

#include "src/stop_signal.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TestPause p;
  if (!parse_test_pause(text, &p)) {
    FUZZ_CHECK(!p.active);
    return 0;
  }
  FUZZ_CHECK(p.active);
  FUZZ_CHECK(p.rank >= 0 && p.rank <= (1 << 20));
  FUZZ_CHECK(p.step <= (uint64_t(1) << 40));
  const size_t colon = text.find(':');
  FUZZ_CHECK(colon != std::string::npos);
  FUZZ_CHECK(std::stoll(text.substr(0, colon)) == p.rank);
  FUZZ_CHECK(std::stoull(text.substr(colon + 1)) == p.step);
  return 0;
}
