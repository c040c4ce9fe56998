// step_list: parses "0,100,500" into sorted, distinct 0-based step indices; rejects anything else.
#include "src/step_list.h"

#include <algorithm>
#include <stdexcept>

#include "src/parse_int.h"

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

// One item: 1..13 decimal digits whose value is at most kMaxStepIndex.
uint64_t parse_item(const std::string& item, size_t position) {
  const std::string where = "item " + std::to_string(position);
  if (item.empty()) throw std::invalid_argument(where + " is empty");
  long long v = 0;
  const IntText t = item.size() > 13
                        ? IntText::kNotDigits
                        : parse_decimal(item, IntSign::kNone, 0, static_cast<long long>(kMaxStepIndex), &v);
  if (t == IntText::kOutOfRange)
    throw std::invalid_argument(where + " " + item + " is larger than " + std::to_string(kMaxStepIndex));
  if (t != IntText::kOk) throw std::invalid_argument(where + " " + quote(item) + " is not a step number");
  return static_cast<uint64_t>(v);
}

}  // namespace

std::vector<uint64_t> parse_step_list(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty list (expected steps like 0,100,500)");
  std::vector<uint64_t> steps;
  size_t begin = 0;
  for (size_t position = 1;; ++position) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    steps.push_back(parse_item(item, position));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  std::vector<uint64_t> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) throw std::invalid_argument("step " + std::to_string(*dup) + " is listed twice");
  return sorted;
}
