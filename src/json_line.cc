// json_line: the JSON object builder behind the --metrics records.
#include "src/json_line.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

// The project's one string escaper (the trace writer's trace_quote is this too): nlohmann's
// serializer, which escapes quotes, backslashes and control bytes and writes bytes that are not
// UTF-8 as U+FFFD, so every line parses.
std::string json_quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
