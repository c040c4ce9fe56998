// json_plain: plain JSON straight into the report's value tree (see reporting/json_plain.h).
// Each function takes the first byte of what it scans and returns the byte after it, or nullptr
// to leave the value to nlohmann's parser.
#include "reporting/json_plain.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <system_error>

namespace {

// The value being started, reset as reporting/json.cc's tree builder resets a reused slot.
void reset(JsonValue& v, JsonValue::Kind kind) {
  v.kind = kind;
  v.boolean = false;
  v.number = 0;
  v.text.clear();
  if (kind != JsonValue::Kind::Array) v.items.clear();
  if (kind != JsonValue::Kind::Object) v.members.clear();
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// a == b for short keys, which mostly differ in length or in their first byte.
bool same_key(const std::string& a, const std::string& b) {
  return a.size() == b.size() && (a.empty() || (a[0] == b[0] && std::memcmp(a.data(), b.data(), a.size()) == 0));
}

// The bytes a string holds as they are: printable ASCII but the quote and the backslash.
struct PlainBytes {
  bool plain[256] = {};
  PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
const PlainBytes kPlain;

// The bytes of a run of digits from p (at least one), or nullptr.
const char* digits(const char* p, const char* end) {
  if (p == end || !is_digit(*p)) return nullptr;
  while (p < end && is_digit(*p)) ++p;
  return p;
}

}  // namespace

const char* PlainJsonScanner::value(const char* p, const char* end, JsonValue& v, size_t depth) const {
  switch (*p) {
    case '{':
      return object(p, end, v, depth);
    case '[':
      return array(p, end, v, depth);
    case '"':
      reset(v, JsonValue::Kind::String);
      return string(p, end, v.text);
    case 't':
      reset(v, JsonValue::Kind::Bool);
      v.boolean = true;
      return literal(p, end, "true", 4);
    case 'f':
      reset(v, JsonValue::Kind::Bool);
      return literal(p, end, "false", 5);
    case 'n':
      reset(v, JsonValue::Kind::Null);
      return literal(p, end, "null", 4);
    default:
      return number(p, end, v);
  }
}

// {"key": value, ...}: the slots of the previous object are written over in order, then trimmed
// to the keys this one has. A key seen before in the object is left to the library (an error).
const char* PlainJsonScanner::object(const char* p, const char* end, JsonValue& v, size_t depth) const {
  if (depth > max_depth_) return nullptr;
  reset(v, JsonValue::Kind::Object);
  size_t used = 0;
  p = skip_space(p + 1, end);
  if (p < end && *p == '}') {
    v.members.clear();
    return p + 1;
  }
  for (;;) {
    if (p == end || *p != '"') return nullptr;
    if (used == v.members.size()) v.members.emplace_back();
    std::string& key = v.members[used].first;
    if (!(p = string(p, end, key))) return nullptr;
    for (size_t m = 0; m < used; ++m)
      if (same_key(v.members[m].first, key)) return nullptr;
    p = skip_space(p, end);
    if (p == end || *p != ':') return nullptr;
    p = skip_space(p + 1, end);
    if (p == end || !(p = value(p, end, v.members[used].second, depth + 1))) return nullptr;
    ++used;
    p = skip_space(p, end);
    if (p == end) return nullptr;
    if (*p == '}') break;
    if (*p != ',') return nullptr;
    p = skip_space(p + 1, end);
  }
  v.members.resize(used);
  return p + 1;
}

const char* PlainJsonScanner::array(const char* p, const char* end, JsonValue& v, size_t depth) const {
  if (depth > max_depth_) return nullptr;
  reset(v, JsonValue::Kind::Array);
  size_t used = 0;
  p = skip_space(p + 1, end);
  if (p < end && *p == ']') {
    v.items.clear();
    return p + 1;
  }
  for (;;) {
    if (used == v.items.size()) v.items.emplace_back();
    if (p == end || !(p = value(p, end, v.items[used], depth + 1))) return nullptr;
    ++used;
    p = skip_space(p, end);
    if (p == end) return nullptr;
    if (*p == ']') break;
    if (*p != ',') return nullptr;
    p = skip_space(p + 1, end);
  }
  v.items.resize(used);
  return p + 1;
}

// A number by JSON's grammar. An integer keeps its text as written, which is its value printed
// again as the library's integer events are (JSON integers have no '+' and no leading zero), but
// for "-0", printed "0"; a decimal keeps its text as written and its value is the correctly
// rounded double (as strtod, which the library calls, gives). Integers of more than
// 18 digits and decimals out of the double's range are left to the library.
const char* PlainJsonScanner::number(const char* p, const char* end, JsonValue& v) const {
  const char* start = p;
  const bool negative = *p == '-';
  if (negative) ++p;
  if (p < end && *p == '0')
    ++p;
  else if (!(p = digits(p, end)))
    return nullptr;
  const char* int_end = p;
  if (p < end && *p == '.' && !(p = digits(p + 1, end))) return nullptr;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (!(p = digits(p, end))) return nullptr;
  }
  if (p == end) return nullptr;  // the number may go on past what is in hand
  reset(v, JsonValue::Kind::Number);
  if (p == int_end) {
    const char* first = start + (negative ? 1 : 0);
    if (p - first > 18) return nullptr;
    int64_t n = 0;
    for (const char* d = first; d < p; ++d) n = n * 10 + (*d - '0');
    v.number = double(negative ? -n : n);
    if (negative && n == 0)  // "-0": the only integer printed other than as written
      v.text = "0";
    else
      v.text.assign(start, size_t(p - start));
    return p;
  }
  double d = 0;
  const auto r = std::from_chars(start, p, d);
  if (r.ec != std::errc() || r.ptr != p) return nullptr;
  v.number = d;
  v.text.assign(start, size_t(p - start));
  return p;
}

// A string from its opening quote: printable ASCII copied in runs, the simple escapes decoded;
// a \u escape, a control byte or any byte outside ASCII is left to the library (it checks UTF-8).
const char* PlainJsonScanner::string(const char* p, const char* end, std::string& out) {
  out.clear();
  ++p;
  for (;;) {
    const char* run = p;
    while (p < end && kPlain.plain[static_cast<unsigned char>(*p)]) ++p;
    out.append(run, size_t(p - run));
    if (p == end) return nullptr;
    if (*p == '"') return p + 1;
    if (*p != '\\' || p + 1 == end) return nullptr;
    switch (p[1]) {
      case '"':
      case '\\':
      case '/':
        out += p[1];
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      default:
        return nullptr;
    }
    p += 2;
  }
}

const char* PlainJsonScanner::literal(const char* p, const char* end, const char* word, size_t n) {
  if (size_t(end - p) < n || std::memcmp(p, word, n) != 0) return nullptr;
  return p + n;
}
