// json: the report's JSON layer over nlohmann/json (Debian's nlohmann-json3-dev, header-only, so
// nothing is added at run time): its strict SAX parser (RFC 8259) builds a small value tree, one
// JsonValue, which the readers query. Errors are thrown as JsonError with one line "line L,
// column C: reason" (1-based, columns in bytes; nlohmann's byte position turned into line and
// column). On top of the library's grammar: a nesting-depth limit (checked as the parser
// descends, so hostile input costs linear time and bounded memory), duplicate keys in an object
// are an error, and numbers keep the token as written ("1.0" stays "1.0"). A stream of items
// (read_json_items of an array: the trace's events) is read by our plain scanner
// (reporting/json_plain.h) where it can, which gives the same values; the rest and every error
// are the library's.
#pragma once
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reporting/byte_source.h"

struct JsonError : std::runtime_error {
  JsonError(int line, int column, const std::string& reason, bool at_end);
  int line, column;
  std::string reason;  // the message without its position
  bool at_end;         // the input ended inside a value (a file cut short)
};

struct JsonLimits {
  size_t max_depth = 64;          // arrays/objects nested deeper are an error
  size_t max_bytes = 256u << 20;  // parse_json: longer text is an error
  // read_json_items of an array: plain items scanned by reporting/json_plain.h (the same values,
  // faster), the rest by the library. false: every byte by the library (tests compare the two).
  bool scan_plain = true;
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
  const JsonValue* find(std::string_view key) const;
};

// Parses text that must hold exactly one JSON value (whitespace around it allowed).
JsonValue parse_json(const std::string& text, const JsonLimits& limits = {});

// How read_json_items' stream of items ended.
struct JsonItems {
  bool found = false;      // the items array was there
  bool cut_short = false;  // the input ended inside it (tolerant reading only)
};

// Streams the items of an array out of src without keeping them: of the array src holds (key
// empty), or of the array that is the member `key` of the object src holds (its other members are
// read and dropped). each_item gets every item in order with the offset of its first byte. A
// missing member is found == false; text that is not one such JSON value is a JsonError.
// tolerant: read what a killed writer left: the input may end anywhere inside the items array (the
// item being read is dropped; cut_short says so), and a ',' may come right before its ']'.
JsonItems read_json_items(ByteSource& src, const std::string& key, const JsonLimits& limits, bool tolerant,
                          const std::function<void(const JsonValue&, size_t)>& each_item);

// Compact JSON text of a value (numbers as written, strings escaped by nlohmann's serializer);
// parse_json of it gives back the same tree.
std::string json_to_text(const JsonValue& v);

// Skips JSON whitespace (space, tab, CR, LF) from pos.
size_t json_skip_space(const std::string& text, size_t pos);
// "line L, column C" of byte pos in text (1-based).
std::pair<int, int> json_line_column(const std::string& text, size_t pos);
