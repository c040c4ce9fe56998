// mini_json: a small strict JSON parser for the tests (RFC 8259 grammar: no trailing commas,
// no comments, numbers as JSON writes them), so a trace is checked as strict JSON, not as text.
#pragma once
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace minijson {

struct Value {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> arr;
  std::map<std::string, Value> obj;

  bool has(const std::string& k) const { return type == kObject && obj.count(k) != 0; }
  // Missing keys and wrong types give a null Value, so lookups chain: e["args"]["step"].
  const Value& operator[](const std::string& k) const {
    static const Value null_value;
    auto it = type == kObject ? obj.find(k) : obj.end();
    return it == obj.end() ? null_value : it->second;
  }
  std::string s() const { return type == kString ? str : ""; }
  double n() const { return type == kNumber ? num : 0; }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}
  // The whole text as one value; throws std::runtime_error("offset N: ...") on any error.
  Value parse() {
    Value v = value();
    ws();
    if (i_ != t_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("offset " + std::to_string(i_) + ": " + what);
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    const std::string s(w);
    if (t_.compare(i_, s.size(), s) != 0) return false;
    i_ += s.size();
    return true;
  }
  Value value() {
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    Value v;
    const char c = t_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') {
      v.type = Value::kString;
      v.str = string();
    } else if (word("null")) {
      v.type = Value::kNull;
    } else if (word("true")) {
      v.type = Value::kBool;
      v.b = true;
    } else if (word("false")) {
      v.type = Value::kBool;
    } else {
      v.type = Value::kNumber;
      v.num = number();
    }
    return v;
  }
  Value object() {
    Value v;
    v.type = Value::kObject;
    expect('{');
    if (eat('}')) return v;
    do {
      ws();
      if (i_ >= t_.size() || t_[i_] != '"') fail("expected a key");
      std::string k = string();
      expect(':');
      v.obj[k] = value();
    } while (eat(','));
    expect('}');
    return v;
  }
  Value array() {
    Value v;
    v.type = Value::kArray;
    expect('[');
    if (eat(']')) return v;
    do v.arr.push_back(value());
    while (eat(','));
    expect(']');
    return v;
  }
  std::string string() {
    ++i_;  // opening quote
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      const unsigned char c = static_cast<unsigned char>(t_[i_++]);
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        s += char(c);
        continue;
      }
      if (i_ >= t_.size()) fail("unfinished escape");
      const char e = t_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          s += e;
          break;
        case 'b':
          s += '\b';
          break;
        case 'f':
          s += '\f';
          break;
        case 'n':
          s += '\n';
          break;
        case 'r':
          s += '\r';
          break;
        case 't':
          s += '\t';
          break;
        case 'u': {
          if (i_ + 4 > t_.size()) fail("short \\u escape");
          for (int k = 0; k < 4; ++k)
            if (!isxdigit(static_cast<unsigned char>(t_[i_ + k]))) fail("bad \\u escape");
          const long cp = std::strtol(t_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          s += cp < 0x80 ? char(cp) : '?';
          break;
        }
        default:
          fail("bad escape");
      }
    }
    if (i_ >= t_.size()) fail("unterminated string");
    ++i_;
    return s;
  }
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  double number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ - d;
    };
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') {
      ++i_;
    } else if (digits() == 0) {
      fail("expected a value");
    }
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (digits() == 0) fail("digits expected after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (digits() == 0) fail("digits expected in the exponent");
    }
    return std::strtod(t_.substr(start, i_ - start).c_str(), nullptr);
  }

  const std::string& t_;
  size_t i_ = 0;
};

inline Value parse(const std::string& text) { return Parser(text).parse(); }

}  // namespace minijson
