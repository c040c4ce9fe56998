// fuzz_json: libFuzzer target for ./report's JSON layer over nlohmann/json (reporting/json.h:
// parse_json, read_json_items, json_to_text).
//
// Input: byte 0 picks the limits (bit 0: a small depth limit of 4, else 64), the rest = the text.
// Contract checked: parse_json returns or throws JsonError, nothing else; an error's message is
// "line L, column C: reason" with L/C inside the text (C may be one past a line's end); an
// accepted value is nested no deeper than the limit and prints (json_to_text) to text that parses
// back to the same print; every string in it is valid UTF-8 (the printer copies bytes as they
// are, so a bad byte would show up on the second parse); read_json_items of an accepted array gives
// its items in order at offsets inside the text, and of any text returns or throws JsonError,
// the same with the plain scanner (reporting/json_plain.h) as with the library alone.
//
// Build: make fuzz (build-fuzz/fuzz_json); run: .ci/fuzz.sh
#include <algorithm>
#include <cstdint>
#include <string>

#include "reporting/json.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

size_t depth(const JsonValue& v) {
  size_t d = 0;
  for (const JsonValue& x : v.items) d = std::max(d, depth(x));
  for (const auto& m : v.members) d = std::max(d, depth(m.second));
  return (v.is_array() || v.is_object()) ? d + 1 : 0;
}

// Every item (its print, its number and its offset) and how read_json_items of the array ended,
// or its error.
std::string items_read(const std::string& text, JsonLimits limits, bool tolerant, bool scan_plain) {
  limits.scan_plain = scan_plain;
  ByteSource src(text);
  std::string out;
  try {
    const JsonItems r = read_json_items(src, "", limits, tolerant, [&](const JsonValue& item, size_t at) {
      out += std::to_string(at) + " " + json_to_text(item) + " " + std::to_string(item.number) + "\n";
    });
    out += std::to_string(r.found) + " " + std::to_string(r.cut_short);
  } catch (const JsonError& e) {
    out += e.what() + std::string(e.at_end ? " at end" : "");
  }
  return out;
}

void check_error(const JsonError& e, const std::string& text) {
  const std::string m = e.what();
  FUZZ_CHECK(m.rfind("line " + std::to_string(e.line) + ", column " + std::to_string(e.column) + ": ", 0) == 0);
  FUZZ_CHECK(!e.reason.empty());
  FUZZ_CHECK(e.reason.find('\n') == std::string::npos);
  FUZZ_CHECK(e.line >= 1 && e.column >= 1);
  int lines = 1;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(e.line <= lines);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  JsonLimits limits;
  if (in.u8() & 1) limits.max_depth = 4;
  const std::string text = in.rest();
  JsonValue v;
  try {
    v = parse_json(text, limits);
  } catch (const JsonError& e) {
    check_error(e, text);
    return 0;
  }
  FUZZ_CHECK(depth(v) <= limits.max_depth);
  const std::string printed = json_to_text(v);
  JsonValue again;
  try {
    again = parse_json(printed, limits);
  } catch (const JsonError& e) {
    std::fprintf(stderr, "printed form does not parse: %s\n", e.what());
    FUZZ_CHECK(!"json_to_text output must parse");
  }
  FUZZ_CHECK(json_to_text(again) == printed);
  if (v.is_array() && limits.max_depth > 1) {
    size_t k = 0, last = 0;
    ByteSource src(text);
    read_json_items(src, "", limits, false, [&](const JsonValue& item, size_t at) {
      FUZZ_CHECK(k < v.items.size() && json_to_text(item) == json_to_text(v.items[k]));
      FUZZ_CHECK(at >= last && at < text.size());
      last = at;
      ++k;
    });
    FUZZ_CHECK(k == v.items.size());
  }
  for (bool tolerant : {false, true}) {
    ByteSource src(text);
    try {
      read_json_items(src, tolerant ? "" : "k", limits, tolerant, [](const JsonValue&, size_t) {});
    } catch (const JsonError& e) {
      check_error(e, text);
    }
    // the items array read with the plain scanner gives what the library alone gives
    FUZZ_CHECK(items_read(text, limits, tolerant, true) == items_read(text, limits, tolerant, false));
  }
  return 0;
}
