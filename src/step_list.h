// step_list: the strict parser of --inspect's list of 0-based optimizer steps ("0,100,500").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

// The largest step index accepted (the same bound as --max-steps).
constexpr uint64_t kMaxStepIndex = uint64_t(1) << 40;

// Decimal step indices separated by single commas, nothing else (no spaces, signs, empty items,
// duplicates; each <= kMaxStepIndex); returned in ascending order. Throws std::invalid_argument
// whose message says what is wrong, e.g. "item 2 'x' is not a step number".
std::vector<uint64_t> parse_step_list(const std::string& text);
