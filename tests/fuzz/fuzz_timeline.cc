// fuzz_timeline: libFuzzer target for ./report's trace reader (reporting/timeline_reader.h:
// parse_timeline_text, summarize_timeline).
//
// Input: the bytes are the trace file's text.
// Contract checked: parse_timeline_text returns or throws TimelineError, nothing else; every
// error is one line that starts with the file name; slices have a duration >= 0; the summary
// counts every slice once (its per-process counts add up to the number of slices, and each
// process's per-name counts add up to its slices).
//
// Build: make fuzz (build-fuzz/fuzz_timeline); run: .ci/fuzz.sh
#include <cstdint>
#include <string>

#include "reporting/timeline_reader.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Timeline t;
  try {
    t = parse_timeline_text(text, "fuzz.json");
  } catch (const TimelineError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz.json", 0) == 0);
    FUZZ_CHECK(m.find('\n') == std::string::npos);
    return 0;
  }
  for (const TraceSlice& s : t.slices) FUZZ_CHECK(s.dur_us >= 0);
  size_t total = 0;
  for (const ProcessSummary& p : summarize_timeline(t)) {
    size_t by_name = 0;
    for (const SliceTotal& n : p.by_name) by_name += n.count;
    FUZZ_CHECK(by_name == p.slices);
    total += p.slices;
  }
  FUZZ_CHECK(total == t.slices.size());
  return 0;
}
