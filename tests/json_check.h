// json_check: strict JSON validation and field readers for the tests of the --metrics file, by
// nlohmann/json (tests only; the report reads the file through reporting/json.h).
#pragma once
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace jsoncheck {

// True when s is exactly one JSON value (surrounding whitespace allowed).
inline bool valid_json(const std::string& s) { return nlohmann::json::accept(s); }

// The first member named `name` in the record, in text order at any depth (our flat records
// have one), or nullptr; a line that is not JSON has none.
inline const nlohmann::ordered_json* find_member(const nlohmann::ordered_json& v, const std::string& name) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() == name) return &it.value();
      if (const nlohmann::ordered_json* inner = find_member(it.value(), name)) return inner;
    }
  } else if (v.is_array()) {
    for (const auto& x : v)
      if (const nlohmann::ordered_json* inner = find_member(x, name)) return inner;
  }
  return nullptr;
}

// A field as text: a string's value, anything else as JSON ("null", "87360"); "" when missing.
inline std::string raw_field(const std::string& line, const std::string& name) {
  const nlohmann::ordered_json v = nlohmann::ordered_json::parse(line, nullptr, false);
  const nlohmann::ordered_json* f = v.is_discarded() ? nullptr : find_member(v, name);
  if (!f) return "";
  return f->is_string() ? f->get<std::string>() : f->dump();
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
