// step_range: the pure parser of ./train --timeline-steps A-B (0-based optimizer steps, inclusive).
#pragma once
#include <string>

struct StepRange {
  long long first = 0;
  long long last = -1;  // -1: no end
  bool contains(long long step) const { return step >= first && (last < 0 || step <= last); }
};

// "A-B" (A <= B) or "A" (that one step): decimal digits only, no signs or spaces, each <= 2^62.
// Returns false for anything else (the caller names the flag in its error).
bool parse_step_range(const std::string& text, StepRange* out);
