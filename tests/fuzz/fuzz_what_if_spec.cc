// fuzz_what_if_spec: libFuzzer target for the what-if switches' parsers (src/what_if_spec.h) and
// the schedstat parser (comm/thread_cpu_clock.h).
//
// Input: the first byte picks the parser (mod 4: --straggler, --link-delay, --link-bandwidth,
// a schedstat line), the rest is the text. Contract checked: each parser returns or throws
// std::invalid_argument with a message (parse_schedstat_run_delay never throws: -1 or a value);
// a --straggler value has a rank in 0..65535 and exactly one of a sleep in [0, 60000] ms or a
// factor in (1, 1000], and its text is digits, one ':', at most one 'x' and '.'s; a delay is in
// [0, 10000] ms from digits and at most one '.'; a rate is in [1, 1e12] B/s and starts with a
// digit or '.'; a run_delay >= 0 comes from three decimal numbers.
//
// Build: make fuzz (build-fuzz/fuzz_what_if_spec); run: .ci/fuzz.sh
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/thread_cpu_clock.h"
#include "src/what_if_spec.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

size_t count(const std::string& s, char c) {
  size_t n = 0;
  for (char x : s) n += x == c;
  return n;
}

void straggler(const std::string& text) {
  StragglerSpec s;
  try {
    s = parse_straggler(text);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
    return;
  }
  FUZZ_CHECK(s.rank >= 0 && s.rank <= 65535 && s.active());
  FUZZ_CHECK(count(text, ':') == 1 && count(text, 'x') <= 1);
  FUZZ_CHECK(text.find_first_not_of("0123456789:x.") == std::string::npos);
  if (s.factor != 0)
    FUZZ_CHECK(s.factor > 1 && s.factor <= 1000 && s.sleep_ms == 0);
  else
    FUZZ_CHECK(s.sleep_ms >= 0 && s.sleep_ms <= 60000);
}

void delay(const std::string& text) {
  try {
    const double ms = parse_link_delay_ms(text);
    FUZZ_CHECK(ms >= 0 && ms <= 10000);
    FUZZ_CHECK(text.find_first_not_of("0123456789.") == std::string::npos && count(text, '.') <= 1);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
  }
}

void rate(const std::string& text) {
  try {
    const double r = parse_link_rate(text);
    FUZZ_CHECK(r >= 1 && r <= 1e12);
    FUZZ_CHECK(!text.empty() && ((text[0] >= '0' && text[0] <= '9') || text[0] == '.'));
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0);
  }
}

void schedstat(const std::string& text) {
  const int64_t v = parse_schedstat_run_delay(text.data(), text.size());
  FUZZ_CHECK(v >= -1);
  if (v >= 0) FUZZ_CHECK(text.find_first_not_of("0123456789 \n") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      straggler(text);
      break;
    case 1:
      delay(text);
      break;
    case 2:
      rate(text);
      break;
    default:
      schedstat(text);
  }
  return 0;
}
