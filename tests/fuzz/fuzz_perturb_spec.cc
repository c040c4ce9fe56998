// fuzz_perturb_spec: libFuzzer target for the BARESGD_TEST_PERTURB parser (src/perturb_spec.h).
//
// Input: the bytes as the variable's value. Contract checked: parse_perturb_spec either returns
// or throws std::invalid_argument whose message names the variable; an active result has a rank
// and step in range and a non-empty layer, and the empty input is the only inactive one.
//
// Build: make fuzz (build-fuzz/fuzz_perturb_spec); run: .ci/fuzz.sh
#include <cstdint>
#include <stdexcept>
#include <string>

#include "src/perturb_spec.h"
#include "src/step_list.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  PerturbSpec s;
  try {
    s = parse_perturb_spec(text);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("BARESGD_TEST_PERTURB: ", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(s.active == !text.empty());
  if (!s.active) return 0;
  FUZZ_CHECK(s.rank >= 0 && s.rank <= (1 << 16));
  FUZZ_CHECK(s.step <= kMaxStepIndex);
  FUZZ_CHECK(!s.layer.empty());
  FUZZ_CHECK(text.find("rank=") != std::string::npos && text.find("step=") != std::string::npos);
  return 0;
}
