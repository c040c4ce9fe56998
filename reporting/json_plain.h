// json_plain: a fast scanner for plain JSON, the shape our own trace writer (src/trace_json.cc)
// gives every event: objects, arrays, ASCII strings with at most the simple escapes (\" \\ \/ \b
// \f \n \r \t), integers of up to 18 digits, finite decimal numbers, true, false, null, shallow
// nesting, no duplicate key. It builds the same JsonValue tree nlohmann's parser gives through
// reporting/json.cc (numbers keep their text as that layer writes it), about ten times faster, and
// gives up on anything else: a \u escape, a byte outside ASCII, a malformed or cut-short value,
// a number it would have to round differently. Whoever calls it then hands the same bytes to the
// library, whose grammar, checks and error messages stay the only ones.
#pragma once
#include <cstddef>

#include "reporting/json.h"

class PlainJsonScanner {
 public:
  // Nesting deeper than this (the value itself is level 1) is left to the library.
  static constexpr size_t kMaxDepth = 8;

  // max_depth: the most the caller allows (values nested deeper are left to the library, which
  // names the error); the scanner's own limit is the smaller.
  explicit PlainJsonScanner(size_t max_depth) : max_depth_(max_depth < kMaxDepth ? max_depth : kMaxDepth) {}

  // Scans the one value that starts at p (p < end; no whitespace before it) into v, reusing v's
  // storage (its strings and its arrays' and objects' slots) from the value scanned before.
  // Returns the byte just after the value, or nullptr when the text there is not plain JSON as
  // above, or the value does not end before end (v is then left half written).
  const char* scan(const char* p, const char* end, JsonValue& v) const { return value(p, end, v, 1); }

  // The byte after the JSON whitespace (space, tab, CR, LF) from p (end when it runs to end).
  static const char* skip_space(const char* p, const char* end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    return p;
  }

 private:
  const char* value(const char* p, const char* end, JsonValue& v, size_t depth) const;
  const char* object(const char* p, const char* end, JsonValue& v, size_t depth) const;
  const char* array(const char* p, const char* end, JsonValue& v, size_t depth) const;
  const char* number(const char* p, const char* end, JsonValue& v) const;
  static const char* string(const char* p, const char* end, std::string& out);
  static const char* literal(const char* p, const char* end, const char* word, size_t n);

  size_t max_depth_;
};
