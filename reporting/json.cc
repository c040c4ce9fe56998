// json: the strict recursive-descent parser behind reporting/json.h, and its printer.
#include "reporting/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

JsonError::JsonError(int line_, int column_, const std::string& reason_, bool at_end_)
    : std::runtime_error("line " + std::to_string(line_) + ", column " + std::to_string(column_) + ": " + reason_),
      line(line_),
      column(column_),
      reason(reason_),
      at_end(at_end_) {}

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& m : members)
    if (m.first == key) return &m.second;
  return nullptr;
}

size_t json_skip_space(const std::string& text, size_t pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) ++pos;
  return pos;
}

std::pair<int, int> json_line_column(const std::string& text, size_t pos) {
  int line = 1, column = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

namespace {

// How a byte is shown in "unexpected ..." messages.
std::string describe_byte(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + char(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

// A key as an error message shows it: control bytes, quotes and backslashes escaped as in
// JSON, so a message stays one line whatever the key holds.
std::string shown_key(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

// "invalid escape '\q' in a string"; a control byte after the backslash is named, never
// copied (an error stays one line).
std::string invalid_escape(unsigned char e) {
  if (e >= 0x20 && e < 0x7f) return "invalid escape '\\" + std::string(1, char(e)) + "' in a string";
  return "invalid escape: a backslash then " + describe_byte(e) + " in a string";
}

class Parser {
 public:
  Parser(const std::string& text, size_t pos, const JsonLimits& limits) : s_(text), i_(pos), lim_(limits) {}

  JsonValue value(size_t depth) {
    skip();
    if (i_ >= s_.size()) fail_end("unexpected end of input, expected a value");
    const char c = s_[i_];
    if (c == '{') return object(depth + 1);
    if (c == '[') return array(depth + 1);
    if (c == '"') {
      JsonValue v;
      v.kind = JsonValue::Kind::String;
      v.text = string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (c == 't') return literal("true", JsonValue::Kind::Bool, true);
    if (c == 'f') return literal("false", JsonValue::Kind::Bool, false);
    if (c == 'n') return literal("null", JsonValue::Kind::Null, false);
    fail("unexpected " + describe_byte(static_cast<unsigned char>(c)) + ", expected a value");
  }

  void skip() { i_ = json_skip_space(s_, i_); }
  size_t pos() const { return i_; }
  [[noreturn]] void fail(const std::string& reason) const { fail_at(i_, reason, false); }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& reason, bool at_end) const {
    const auto lc = json_line_column(s_, at);
    throw JsonError(lc.first, lc.second, reason, at_end);
  }
  [[noreturn]] void fail_end(const std::string& reason) const { fail_at(i_, reason, true); }

  void expect_more(const char* what) const {
    if (i_ >= s_.size()) fail_end(std::string("unexpected end of input, expected ") + what);
  }

  JsonValue literal(const char* word, JsonValue::Kind kind, bool b) {
    const size_t start = i_;
    for (const char* p = word; *p; ++p, ++i_) {
      if (i_ >= s_.size()) fail_at(start, std::string("unexpected end of input in '") + word + "'", true);
      if (s_[i_] != *p) fail_at(start, "invalid literal, expected '" + std::string(word) + "'", false);
    }
    JsonValue v;
    v.kind = kind;
    v.boolean = b;
    return v;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  JsonValue number() {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size()) fail_end("unexpected end of input in a number");
    if (s_[i_] == '0') {
      ++i_;
      if (i_ < s_.size() && digit(s_[i_])) fail("leading zero in a number");
    } else if (digit(s_[i_])) {
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    } else {
      fail("expected a digit in a number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size()) fail_end("unexpected end of input in a number");
      if (!digit(s_[i_])) fail("expected a digit after '.' in a number");
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size()) fail_end("unexpected end of input in a number");
      if (!digit(s_[i_])) fail("expected a digit in a number's exponent");
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    JsonValue v;
    v.kind = JsonValue::Kind::Number;
    v.text = s_.substr(start, i_ - start);
    v.number = std::strtod(v.text.c_str(), nullptr);
    if (!std::isfinite(v.number)) fail_at(start, "number out of range", false);
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  // Four hex digits after "\u"; i_ is at the first of them.
  unsigned hex4() {
    unsigned v = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      if (i_ >= s_.size()) fail_end("unexpected end of input in a \\u escape");
      const char c = s_[i_];
      int d = digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) fail("expected 4 hex digits after \\u");
      v = v * 16 + unsigned(d);
    }
    return v;
  }

  // \uXXXX, with a surrogate pair as two escapes; i_ is just after the "\u".
  unsigned unicode_escape(size_t escape_start) {
    const unsigned hi = hex4();
    if (hi >= 0xdc00 && hi <= 0xdfff) fail_at(escape_start, "unpaired low surrogate in a \\u escape", false);
    if (hi < 0xd800 || hi > 0xdbff) return hi;
    if (i_ >= s_.size() || (s_[i_] == '\\' && i_ + 1 >= s_.size()))
      fail_end("unexpected end of input after a high surrogate");
    if (s_[i_] != '\\' || s_[i_ + 1] != 'u') fail_at(escape_start, "unpaired high surrogate in a \\u escape", false);
    i_ += 2;
    const unsigned lo = hex4();
    if (lo < 0xdc00 || lo > 0xdfff) fail_at(escape_start, "unpaired high surrogate in a \\u escape", false);
    return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
  }

  // Length of the valid UTF-8 sequence at p (a byte >= 0x80), or 0 (overlong, surrogate, > U+10FFFF).
  size_t utf8_length(size_t p) const {
    const unsigned char c = static_cast<unsigned char>(s_[p]);
    size_t n = 0;
    unsigned cp = 0, min = 0;
    if (c >= 0xc2 && c <= 0xdf)
      n = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
      n = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 4, cp = c & 0x07, min = 0x10000;
    else
      return 0;
    if (p + n > s_.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s_[p + k]);
      if ((d & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail_end("unexpected end of input in a string");
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail("control character " + describe_byte(c) + " in a string (escape it)");
      if (c == '\\') {
        escape(out);
      } else if (c < 0x80) {
        out += char(c);
        ++i_;
      } else {
        const size_t n = utf8_length(i_);
        if (n == 0) fail("invalid UTF-8 in a string");
        out.append(s_, i_, n);
        i_ += n;
      }
    }
  }

  void escape(std::string& out) {
    const size_t start = i_;
    ++i_;
    if (i_ >= s_.size()) fail_end("unexpected end of input in a string");
    const char e = s_[i_++];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
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
      case 'u':
        append_utf8(out, unicode_escape(start));
        break;
      default:
        fail_at(start, invalid_escape(static_cast<unsigned char>(e)), false);
    }
  }

  void check_depth(size_t depth) const {
    if (depth > lim_.max_depth) fail("nesting deeper than " + std::to_string(lim_.max_depth) + " levels");
  }

  JsonValue array(size_t depth) {
    check_depth(depth);
    ++i_;
    JsonValue v;
    v.kind = JsonValue::Kind::Array;
    skip();
    expect_more("a value or ']'");
    if (s_[i_] == ']') {
      ++i_;
      return v;
    }
    for (;;) {
      v.items.push_back(value(depth));
      skip();
      expect_more("',' or ']'");
      if (s_[i_] == ']') {
        ++i_;
        return v;
      }
      if (s_[i_] != ',')
        fail("unexpected " + describe_byte(static_cast<unsigned char>(s_[i_])) + ", expected ',' or ']'");
      ++i_;
    }
  }

  JsonValue object(size_t depth) {
    check_depth(depth);
    ++i_;
    JsonValue v;
    v.kind = JsonValue::Kind::Object;
    std::unordered_set<std::string> keys;  // duplicate check in linear time
    skip();
    expect_more("a key or '}'");
    if (s_[i_] == '}') {
      ++i_;
      return v;
    }
    for (;;) {
      skip();
      expect_more("a key");
      if (s_[i_] != '"')
        fail("unexpected " + describe_byte(static_cast<unsigned char>(s_[i_])) + ", expected a key in quotes");
      const size_t key_at = i_;
      std::string key = string();
      if (!keys.insert(key).second) fail_at(key_at, "duplicate key \"" + shown_key(key) + "\"", false);
      skip();
      expect_more("':'");
      if (s_[i_] != ':')
        fail("unexpected " + describe_byte(static_cast<unsigned char>(s_[i_])) + ", expected ':' after a key");
      ++i_;
      v.members.emplace_back(std::move(key), value(depth));
      skip();
      expect_more("',' or '}'");
      if (s_[i_] == '}') {
        ++i_;
        return v;
      }
      if (s_[i_] != ',')
        fail("unexpected " + describe_byte(static_cast<unsigned char>(s_[i_])) + ", expected ',' or '}'");
      ++i_;
    }
  }

  const std::string& s_;
  size_t i_;
  const JsonLimits& lim_;
};

void check_size(const std::string& text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw JsonError(
        1, 1,
        "input of " + std::to_string(text.size()) + " bytes is over the limit of " + std::to_string(limits.max_bytes),
        false);
}

void print(const JsonValue& v, std::string& out);

void print_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += '"';
}

void print(const JsonValue& v, std::string& out) {
  switch (v.kind) {
    case JsonValue::Kind::Null:
      out += "null";
      break;
    case JsonValue::Kind::Bool:
      out += v.boolean ? "true" : "false";
      break;
    case JsonValue::Kind::Number:
      out += v.text;
      break;
    case JsonValue::Kind::String:
      print_string(v.text, out);
      break;
    case JsonValue::Kind::Array:
      out += '[';
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out += ',';
        print(v.items[k], out);
      }
      out += ']';
      break;
    case JsonValue::Kind::Object:
      out += '{';
      for (size_t k = 0; k < v.members.size(); ++k) {
        if (k) out += ',';
        print_string(v.members[k].first, out);
        out += ':';
        print(v.members[k].second, out);
      }
      out += '}';
      break;
  }
}

}  // namespace

JsonValue parse_json_at(const std::string& text, size_t& pos, const JsonLimits& limits) {
  check_size(text, limits);
  Parser p(text, pos, limits);
  JsonValue v = p.value(0);
  pos = p.pos();
  return v;
}

JsonValue parse_json(const std::string& text, const JsonLimits& limits) {
  check_size(text, limits);
  Parser p(text, 0, limits);
  JsonValue v = p.value(0);
  p.skip();
  if (p.pos() < text.size())
    p.fail("unexpected " + describe_byte(static_cast<unsigned char>(text[p.pos()])) + " after the value");
  return v;
}

std::string json_to_text(const JsonValue& v) {
  std::string out;
  print(v, out);
  return out;
}
