// fuzz_run_config: libFuzzer target for the configuration block of version 4 checkpoints
// (src/run_config.h parse_run_config, format_run_config, run_config_changes).
//
// Input: the block's text; with a NUL byte in it, the part after the first NUL is a second block
// (the "this run" side of run_config_changes).
// Contract checked: parse_run_config returns or throws std::runtime_error with one line starting
// "config block: "; what it accepts has a run id of 16 lowercase hex digits, sizes in range and
// finite non-negative floats, and formats to text that parses to the same configuration and
// formats to itself (a fixpoint). run_config_changes of a block against itself is empty; against
// another it names every difference as one-line phrases, world size first.
//
// Build: make fuzz (build-fuzz/fuzz_run_config); run: .ci/fuzz.sh
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "src/run_config.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

bool parse(const std::string& text, RunConfig* out) {
  try {
    *out = parse_run_config(text);
    return true;
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("config block: ", 0) == 0);
    FUZZ_CHECK(m.find('\n') == std::string::npos && m.find('\r') == std::string::npos);
    return false;
  }
}

void check_accepted(const RunConfig& c) {
  FUZZ_CHECK(is_run_id(c.run_id));
  FUZZ_CHECK(c.world_size >= 1 && c.batch_size >= 1 && c.settings.threads >= 1 && c.settings.epochs >= 0);
  FUZZ_CHECK(std::isfinite(c.settings.lr) && c.settings.lr >= 0);
  FUZZ_CHECK(std::isfinite(c.settings.momentum) && c.settings.momentum >= 0);
  FUZZ_CHECK(std::isfinite(c.settings.predivide) && c.settings.predivide > 0);
  const std::string text = format_run_config(c);
  RunConfig again;
  FUZZ_CHECK(parse(text, &again));
  FUZZ_CHECK(format_run_config(again) == text);
  FUZZ_CHECK(again.settings.lr == c.settings.lr && again.settings.momentum == c.settings.momentum &&
             again.settings.predivide == c.settings.predivide);
  FUZZ_CHECK(run_config_changes(c, true, again).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  RunConfig a, b;
  const bool ok_a = parse(all.substr(0, nul), &a);
  if (ok_a) check_accepted(a);
  if (nul == std::string::npos) return 0;
  const bool ok_b = parse(all.substr(nul + 1), &b);
  if (ok_b) check_accepted(b);
  if (!ok_a || !ok_b) return 0;
  for (bool known : {true, false}) {
    const auto changes = run_config_changes(a, known, b);
    for (size_t k = 0; k < changes.size(); ++k) {
      const SettingChange& c = changes[k];
      FUZZ_CHECK(c.was != c.now && !c.was.empty() && !c.now.empty());
      FUZZ_CHECK(c.was.find('\n') == std::string::npos && c.now.find('\n') == std::string::npos);
      FUZZ_CHECK(c.kind != SettingChange::kWorldSize || k == 0);
      FUZZ_CHECK(known || c.kind != SettingChange::kHarmless);
    }
    FUZZ_CHECK((a.world_size != b.world_size) == (!changes.empty() && changes[0].kind == SettingChange::kWorldSize));
  }
  return 0;
}
