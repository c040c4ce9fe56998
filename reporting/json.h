// json: a small strict JSON parser (RFC 8259) for the report's inputs: a pure function from text
// to a value tree. Errors are thrown as JsonError with one line "line L, column C: reason"
// (1-based, columns in bytes). Limits: nesting depth and input size, both checked before any
// work that depends on them, so hostile input costs at most linear time and memory.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct JsonError : std::runtime_error {
  JsonError(int line, int column, const std::string& reason, bool at_end);
  int line, column;
  std::string reason;  // the message without its position
  bool at_end;         // the input ended inside a value (a file cut short)
};

struct JsonLimits {
  size_t max_depth = 64;          // arrays/objects nested deeper are an error
  size_t max_bytes = 256u << 20;  // larger inputs are an error
};

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;              // String: the decoded UTF-8; Number: the token as written (e.g. "1.0")
  std::vector<JsonValue> items;  // Array
  std::vector<std::pair<std::string, JsonValue>> members;  // Object, in input order, keys unique

  bool is_number() const { return kind == Kind::Number; }
  bool is_string() const { return kind == Kind::String; }
  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  // The member named key of an object, or nullptr (also for a value that is not an object).
  const JsonValue* find(const std::string& key) const;
};

// Parses text that must hold exactly one JSON value (whitespace around it allowed).
JsonValue parse_json(const std::string& text, const JsonLimits& limits = {});

// Parses one value starting at byte pos (leading whitespace skipped) and returns it; pos is left
// just after the value. For streams of values (a trace file's array read element by element).
// Positions in errors count from the start of text.
JsonValue parse_json_at(const std::string& text, size_t& pos, const JsonLimits& limits = {});

// Compact JSON text of a value (numbers as written, strings re-escaped); parse_json of it gives
// back the same tree.
std::string json_to_text(const JsonValue& v);

// Skips JSON whitespace (space, tab, CR, LF) from pos.
size_t json_skip_space(const std::string& text, size_t pos);
// "line L, column C" of byte pos in text (1-based).
std::pair<int, int> json_line_column(const std::string& text, size_t pos);
