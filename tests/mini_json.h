// mini_json: the tests' view of a JSON document, parsed strictly by nlohmann/json (RFC 8259: no
// trailing commas, no comments, numbers as JSON writes them), so a trace is checked as strict
// JSON, not as text. Value keeps the small interface the tests read: type, arr, obj,
// e["args"]["step"], s(), n().
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

inline Value from_library(const nlohmann::json& j) {
  Value v;
  if (j.is_boolean()) {
    v.type = Value::kBool;
    v.b = j.get<bool>();
  } else if (j.is_number()) {
    v.type = Value::kNumber;
    v.num = j.get<double>();
  } else if (j.is_string()) {
    v.type = Value::kString;
    v.str = j.get<std::string>();
  } else if (j.is_array()) {
    v.type = Value::kArray;
    for (const auto& x : j) v.arr.push_back(from_library(x));
  } else if (j.is_object()) {
    v.type = Value::kObject;
    for (auto it = j.begin(); it != j.end(); ++it) v.obj[it.key()] = from_library(it.value());
  }
  return v;
}

// The whole text as one value; throws std::runtime_error (nlohmann's message, with the line,
// column and byte of the error) on any error.
inline Value parse(const std::string& text) {
  try {
    return from_library(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace minijson
