// json_check: a small strict JSON validator and flat-record field readers for the tests of the
// --metrics file (tests only; the report has its own parser).
#pragma once
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <string>

namespace jsoncheck {

class Validator {
 public:
  explicit Validator(const std::string& s) : s_(s) {}
  // True when s is exactly one JSON value (surrounding whitespace allowed).
  bool valid() {
    ws();
    if (!value(0)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  bool value(int depth) {
    if (depth > 64 || i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == '-' || std::isdigit((unsigned char)c)) return number();
    return literal("true") || literal("false") || literal("null");
  }
  bool object(int depth) {
    ++i_;
    ws();
    if (peek('}')) return ++i_, true;
    while (true) {
      ws();
      if (!string()) return false;
      ws();
      if (!peek(':')) return false;
      ++i_;
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (peek('}')) return ++i_, true;
      if (!peek(',')) return false;
      ++i_;
    }
  }
  bool array(int depth) {
    ++i_;
    ws();
    if (peek(']')) return ++i_, true;
    while (true) {
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (peek(']')) return ++i_, true;
      if (!peek(',')) return false;
      ++i_;
    }
  }
  bool string() {
    if (!peek('"')) return false;
    for (++i_; i_ < s_.size(); ++i_) {
      const unsigned char c = s_[i_];
      if (c == '"') return ++i_, true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        const char e = s_[i_];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i_ >= s_.size() || !std::isxdigit((unsigned char)s_[i_])) return false;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool number() {
    static const std::regex re(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::smatch m;
    const std::string rest = s_.substr(i_, 64);
    if (!std::regex_search(rest, m, re, std::regex_constants::match_continuous)) return false;
    i_ += size_t(m.length(0));
    return true;
  }
  bool literal(const char* w) {
    const std::string t(w);
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void ws() {
    while (i_ < s_.size() && std::isspace((unsigned char)s_[i_])) ++i_;
  }
  const std::string& s_;
  size_t i_ = 0;
};

inline bool valid_json(const std::string& s) { return Validator(s).valid(); }

// Fields of our flat records (the first occurrence of "name":).
inline std::string raw_field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  size_t b = at + key.size(), e = b;
  if (e < line.size() && line[e] == '"') {
    e = line.find('"', b + 1);
    return line.substr(b + 1, e - b - 1);
  }
  while (e < line.size() && line[e] != ',' && line[e] != '}') ++e;
  return line.substr(b, e - b);
}
// A missing field, or one that is not wholly a number, is NaN: every comparison with it fails
// (0 would pass a check like "wait_s == 0" for a record without wait_s).
inline double num_field(const std::string& line, const std::string& name) {
  const std::string raw = raw_field(line, name);
  char* end = nullptr;
  const double v = std::strtod(raw.c_str(), &end);
  return raw.empty() || *end ? std::nan("") : v;
}
// A missing field, or one that is not wholly an integer, is kNoInt (far from any real value).
constexpr long long kNoInt = LLONG_MIN;
inline long long int_field(const std::string& line, const std::string& name) {
  const std::string raw = raw_field(line, name);
  char* end = nullptr;
  const long long v = std::strtoll(raw.c_str(), &end, 10);
  return raw.empty() || *end ? kNoInt : v;
}

}  // namespace jsoncheck
