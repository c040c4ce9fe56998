// json_line: the JSON object builder behind the --metrics records.
#include "src/json_line.h"

#include <cmath>
#include <cstdio>

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

JsonLine& JsonLine::key(const char* name) {
  if (!body_.empty()) body_ += ",";
  body_ += json_quote(name) + ":";
  return *this;
}

JsonLine& JsonLine::str(const char* name, const std::string& v) {
  key(name).body_ += json_quote(v);
  return *this;
}

JsonLine& JsonLine::num(const char* name, double v) {
  if (!std::isfinite(v)) return null(name);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  key(name).body_ += buf;
  return *this;
}

JsonLine& JsonLine::integer(const char* name, long long v) {
  key(name).body_ += std::to_string(v);
  return *this;
}

JsonLine& JsonLine::boolean(const char* name, bool v) {
  key(name).body_ += v ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::null(const char* name) {
  key(name).body_ += "null";
  return *this;
}

JsonLine& JsonLine::raw(const char* name, const std::string& json) {
  key(name).body_ += json;
  return *this;
}

JsonLine& JsonLine::strings(const char* name, const std::vector<std::string>& v) {
  std::string a = "[";
  for (size_t i = 0; i < v.size(); ++i) a += (i ? "," : "") + json_quote(v[i]);
  return raw(name, a + "]");
}
