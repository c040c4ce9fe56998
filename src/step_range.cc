// step_range: parses --timeline-steps "A-B" / "A" strictly (digits only, A <= B).
#include "src/step_range.h"

namespace {

constexpr long long kMaxStep = 1LL << 62;

// The digits in [begin, end) as a number; false when empty, not all digits, or above kMaxStep.
bool parse_step(const std::string& s, size_t begin, size_t end, long long* out) {
  if (begin >= end) return false;
  long long v = 0;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const int digit = s[i] - '0';
    if (v > (kMaxStep - digit) / 10) return false;  // v * 10 + digit would pass kMaxStep
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_step_range(const std::string& text, StepRange* out) {
  const size_t dash = text.find('-');
  StepRange r;
  if (dash == std::string::npos) {
    if (!parse_step(text, 0, text.size(), &r.first)) return false;
    r.last = r.first;
  } else if (!parse_step(text, 0, dash, &r.first) || !parse_step(text, dash + 1, text.size(), &r.last) ||
             r.first > r.last) {
    return false;
  }
  *out = r;
  return true;
}
