// json_line: builds one JSON object on one line, fields in the order they are added (the
// --metrics records). Strings are escaped; non-finite numbers become null.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

class JsonLine {
 public:
  JsonLine& str(const char* name, const std::string& v);
  JsonLine& num(const char* name, double v);  // %.10g; NaN/inf -> null
  JsonLine& integer(const char* name, long long v);
  JsonLine& boolean(const char* name, bool v);
  JsonLine& null(const char* name);
  JsonLine& raw(const char* name, const std::string& json);  // an already-built JSON value
  JsonLine& strings(const char* name, const std::vector<std::string>& v);
  // "{...}" without a newline.
  std::string object() const { return "{" + body_ + "}"; }

 private:
  JsonLine& key(const char* name);
  std::string body_;
};

// s as a JSON string literal, quotes included (nlohmann's escaping; bytes that are not UTF-8
// become U+FFFD).
std::string json_quote(const std::string& s);
