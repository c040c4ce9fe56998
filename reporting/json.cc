// json: nlohmann's SAX parser feeding the report's value tree (see reporting/json.h). The grammar,
// UTF-8 checks, escapes and numbers are the library's; this file adds the tree, the depth limit,
// the duplicate-key check and the "line L, column C: reason" messages, and takes turns with the
// plain scanner (reporting/json_plain.h) over a stream of items.
#include "reporting/json.h"
#include "reporting/json_plain.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <memory>
#include <string_view>
#include <unordered_set>

using njson = nlohmann::json;

JsonError::JsonError(int line_, int column_, const std::string& reason_, bool at_end_)
    : std::runtime_error("line " + std::to_string(line_) + ", column " + std::to_string(column_) + ": " + reason_),
      line(line_),
      column(column_),
      reason(reason_),
      at_end(at_end_) {}

namespace {
// a == b for the short keys of trace events: most differ in their first byte, which is compared
// before the library's memcmp is called.
bool same_key(std::string_view a, std::string_view b) {
  return a.size() == b.size() && (a.empty() || (a[0] == b[0] && a.compare(b) == 0));
}
}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& m : members)
    if (same_key(m.first, key)) return &m.second;
  return nullptr;
}

size_t json_skip_space(const std::string& text, size_t pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) ++pos;
  return pos;
}

std::pair<int, int> json_line_column(const std::string& text, size_t pos) {
  return ByteSource(text).line_column(std::min(pos, text.size()));
}

namespace {

// A string as a JSON literal, by nlohmann's serializer (bytes that are not UTF-8 become U+FFFD,
// so the text always parses).
std::string string_literal(const std::string& s) {
  return njson(s).dump(-1, ' ', false, njson::error_handler_t::replace);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column
// 8: " head (the position is given again, counted from the start of the whole input), cut to a
// length that keeps the line readable (the library quotes the token it read, which can be long).
std::string library_reason(const std::string& what) {
  std::string_view r(what);
  if (r.substr(0, 16) == "[json.exception." && r.find("] ") != std::string_view::npos)
    r.remove_prefix(r.find("] ") + 2);
  if (r.substr(0, 11) == "parse error" && r.find(": ") != std::string_view::npos) r.remove_prefix(r.find(": ") + 2);
  constexpr size_t kMax = 200;
  std::string out(r.substr(0, kMax));
  if (r.size() > kMax) out += "...";
  return out;
}

// Where a SAX parse stopped and why. Offsets count from the start of the source.
class ParseFailure {
 public:
  ParseFailure(ByteSource& src, size_t start) : src_(src), start_(start) {}

  // At the byte just consumed (a bracket or a key's closing quote).
  bool fail_here(const std::string& reason) {
    set(src_.offset() - 1, reason);
    return false;
  }
  // nlohmann's report: position is how many bytes it had read from start_ (the offending one
  // included), or one past the end when the input ran out.
  bool library_error(size_t position, const std::exception& ex) {
    set(offset_of(position), library_reason(ex.what()));
    return false;
  }
  size_t offset_of(size_t position) const { return start_ + (position > 0 ? position - 1 : 0); }
  [[noreturn]] void raise() const {
    const auto lc = src_.line_column(offset_);
    const bool at_end = offset_ >= src_.size() && src_.at_end();
    throw JsonError(lc.first, lc.second, reason_, at_end);
  }
  void set(size_t offset, const std::string& reason) {
    if (failed_) return;
    failed_ = true;
    offset_ = offset;
    reason_ = reason;
  }

 private:
  ByteSource& src_;
  size_t start_;
  bool failed_ = false;
  size_t offset_ = 0;
  std::string reason_;
};

// nlohmann SAX events -> one JsonValue (an object's keys unique, nesting at most max_depth).
class TreeBuilder {
 public:
  using number_integer_t = njson::number_integer_t;
  using number_unsigned_t = njson::number_unsigned_t;
  using number_float_t = njson::number_float_t;
  using string_t = njson::string_t;
  using binary_t = njson::binary_t;

  TreeBuilder(ParseFailure& fail, size_t max_depth) : fail_(fail), max_depth_(max_depth) {}

  bool null() { return slot(JsonValue::Kind::Null) != nullptr; }
  bool boolean(bool b) {
    slot(JsonValue::Kind::Bool)->boolean = b;
    return true;
  }
  bool number_integer(number_integer_t v) { return integer(double(v), v); }
  bool number_unsigned(number_unsigned_t v) { return integer(double(v), v); }
  bool number_float(number_float_t v, const string_t& as_written) { return number(v, as_written); }
  bool string(string_t& s) {
    slot(JsonValue::Kind::String)->text = s;  // a copy: the parser keeps its buffer for the next token
    return true;
  }
  bool binary(binary_t&) { return true; }  // JSON text has no binary values
  bool start_object(std::size_t) { return open(JsonValue::Kind::Object); }
  bool start_array(std::size_t) { return open(JsonValue::Kind::Array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k) {
    Open& o = open_.back();
    if (is_duplicate(k)) return fail_.fail_here("duplicate key " + string_literal(k));
    if (o.used < o.value->members.size())
      o.value->members[o.used].first = k;  // over the previous item's member: its storage is kept
    else
      o.value->members.emplace_back(k, JsonValue());
    ++o.used;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    return fail_.library_error(position, ex);
  }

  bool done() const { return done_; }
  // The finished value, moved out.
  JsonValue take() {
    done_ = false;
    return std::move(root_);
  }
  // The finished value, left in place: the next value reuses its storage (a stream of items
  // then allocates little per item).
  const JsonValue& value() const { return root_; }

 private:
  // An integer's text written straight into the value (no temporary string per number).
  template <typename Int>
  bool integer(double v, Int i) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, i).ptr;
    JsonValue* x = slot(JsonValue::Kind::Number);
    x->number = v;
    x->text.assign(buf, size_t(end - buf));
    return true;
  }
  bool number(double v, const std::string& text) {
    JsonValue* x = slot(JsonValue::Kind::Number);
    x->number = v;
    x->text = text;
    return true;
  }
  // The value being started: the root, the next array item, or the value of the last key. The
  // tree of the previous value is written over in place (containers keep their slots until
  // close() trims them to what this value filled), so a stream of items of one shape allocates
  // almost nothing per item.
  JsonValue* slot(JsonValue::Kind kind) {
    JsonValue* v;
    if (open_.empty()) {
      v = &root_;
      done_ = kind != JsonValue::Kind::Object && kind != JsonValue::Kind::Array;
    } else if (open_.back().value->kind == JsonValue::Kind::Array) {
      Open& o = open_.back();
      if (o.used == o.value->items.size()) o.value->items.emplace_back();
      v = &o.value->items[o.used++];
    } else {
      v = &open_.back().value->members[open_.back().used - 1].second;
    }
    v->kind = kind;
    v->boolean = false;
    v->number = 0;
    v->text.clear();
    if (kind != JsonValue::Kind::Array) v->items.clear();
    if (kind != JsonValue::Kind::Object) v->members.clear();
    return v;
  }
  bool open(JsonValue::Kind kind) {
    if (open_.size() + 1 > max_depth_)
      return fail_.fail_here("nesting deeper than " + std::to_string(max_depth_) + " levels");
    JsonValue* v = slot(kind);
    open_.push_back({v, 0});
    keys_.emplace_back();
    return true;
  }
  bool close() {
    Open& o = open_.back();
    if (o.value->kind == JsonValue::Kind::Array)
      o.value->items.resize(o.used);
    else
      o.value->members.resize(o.used);
    open_.pop_back();
    keys_.pop_back();
    done_ = open_.empty();
    return true;
  }
  // Small objects are searched; from 16 keys on, a set keeps the check linear.
  bool is_duplicate(const std::string& k) {
    const Open& o = open_.back();
    std::unique_ptr<std::unordered_set<std::string>>& set = keys_.back();
    if (!set && o.used < 16) {
      for (size_t m = 0; m < o.used; ++m)
        if (same_key(o.value->members[m].first, k)) return true;
      return false;
    }
    if (!set) {
      set = std::make_unique<std::unordered_set<std::string>>();
      for (size_t m = 0; m < o.used; ++m) set->insert(o.value->members[m].first);
    }
    return !set->insert(k).second;
  }

  // An array or object being filled, and how many of its slots this value has filled so far.
  struct Open {
    JsonValue* value;
    size_t used;
  };

  ParseFailure& fail_;
  size_t max_depth_;
  JsonValue root_;
  bool done_ = false;
  std::vector<Open> open_;  // the arrays and objects being filled, outermost first
  std::vector<std::unique_ptr<std::unordered_set<std::string>>> keys_;
};

// SAX events of an array of items, at the top (items_depth 1) or as the member `key` of the top
// object (items_depth 2): each item is built by a TreeBuilder and handed on with the offset of its
// first byte; the rest is only checked.
class ItemStreamer {
 public:
  using number_integer_t = njson::number_integer_t;
  using number_unsigned_t = njson::number_unsigned_t;
  using number_float_t = njson::number_float_t;
  using string_t = njson::string_t;
  using binary_t = njson::binary_t;

  ItemStreamer(ByteSource& src, ParseFailure& fail, const std::string& key, const JsonLimits& limits, bool tolerant,
               const std::function<void(const JsonValue&, size_t)>& each_item)
      : src_(src),
        fail_(fail),
        key_(key),
        items_depth_(key.empty() ? 1 : 2),
        max_depth_(limits.max_depth),
        tolerant_(tolerant),
        item_(fail, limits.max_depth > items_depth_ ? limits.max_depth - items_depth_ : 0),
        each_(each_item) {}

  bool null() { return !in_item() || scalar_item(item_.null()); }
  bool boolean(bool b) { return !in_item() || scalar_item(item_.boolean(b)); }
  bool number_integer(number_integer_t v) { return !in_item() || scalar_item(item_.number_integer(v)); }
  bool number_unsigned(number_unsigned_t v) { return !in_item() || scalar_item(item_.number_unsigned(v)); }
  bool number_float(number_float_t v, const string_t& s) { return !in_item() || scalar_item(item_.number_float(v, s)); }
  bool string(string_t& s) { return !in_item() || scalar_item(item_.string(s)); }
  bool binary(binary_t&) { return true; }
  bool start_object(std::size_t n) {
    if (in_item()) return container_item(item_.start_object(n));
    if (depth_ == 0 && items_depth_ == 1) return fail_.fail_here("expected a JSON array");
    return descend();
  }
  bool start_array(std::size_t n) {
    if (in_item()) return container_item(item_.start_array(n));
    if (depth_ == 0 && items_depth_ == 2) return fail_.fail_here("expected a JSON object");
    if (depth_ + 1 == items_depth_ && (items_depth_ == 1 || next_is_items_)) {
      in_items_ = result_.found = true;
      prev_end_ = src_.offset();
    }
    return descend();
  }
  bool end_object() {
    if (item_open_) return item(item_.end_object(), true);
    --depth_;
    return true;
  }
  bool end_array() {
    if (item_open_) return item(item_.end_array(), true);
    if (in_items_ && depth_ == items_depth_) in_items_ = false;
    --depth_;
    return true;
  }
  bool key(string_t& k) {
    if (item_open_) return item_.key(k);
    if (depth_ != 1 || items_depth_ != 2) return true;
    if (!root_keys_.insert(k).second) return fail_.fail_here("duplicate key " + string_literal(k));
    next_is_items_ = k == key_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) {
    if (tolerant_ && in_items_) {
      if (fail_.offset_of(position) >= src_.size() && src_.at_end()) {
        result_.cut_short = true;  // a killed writer's last item, or no ']'
        return false;
      }
      // The token text holds what was read since the last value; a ']' ends it here.
      if (!item_open_ && depth_ == items_depth_ && !last_token.empty() && last_token.back() == ']') {
        closed_after_comma_ = true;  // "[ a, b, ]"
        return false;
      }
    }
    return fail_.library_error(position, ex);
  }

  JsonItems result() const { return result_; }
  bool closed_after_comma() const { return closed_after_comma_; }

  // Read on from inside the items array: the parser is given "[[]" before the source's bytes
  // (which follow an item), and that "[]" item is not handed on.
  void resume_after_an_item() { skip_ = 1; }
  // Stop (the parse returns false, yielded() true) just after the next item that is an array or
  // an object, so that its caller can read on from there.
  void yield_after_an_item() { yield_ = true; }
  bool yielded() const { return yielded_; }

 private:
  // At the items' own level, or inside an item being built.
  bool in_item() const { return item_open_ || (in_items_ && depth_ == items_depth_); }
  bool container_item(bool ok) {
    if (!item_open_) item_start_ = src_.offset() - 1;  // the '{' or '[' just read
    return item(ok, true);
  }
  bool scalar_item(bool ok) {
    if (!item_open_) item_start_ = scalar_start();
    return item(ok, false);
  }
  // After an event went to the item's builder: a finished item goes to each_item.
  bool item(bool ok, bool container) {
    if (!ok) return false;
    item_open_ = !item_.done();
    if (item_open_) return true;
    prev_end_ = src_.offset();
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    each_(item_.value(), item_start_);
    yielded_ = yield_ && container;  // a scalar's parser has read one byte past it: go on
    return !yielded_;
  }
  // A scalar item's first byte: the parser has read past it, so look again at what followed
  // the previous item (rare: traces hold objects).
  size_t scalar_start() const {
    const std::string b = src_.bytes(prev_end_, src_.offset());
    size_t i = 0;
    while (i < b.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == ',')) ++i;
    return prev_end_ + i;
  }
  bool descend() {
    if (++depth_ > max_depth_) return fail_.fail_here("nesting deeper than " + std::to_string(max_depth_) + " levels");
    if (depth_ == 2) next_is_items_ = false;
    return true;
  }

  ByteSource& src_;
  ParseFailure& fail_;
  const std::string& key_;
  const size_t items_depth_, max_depth_;
  const bool tolerant_;
  TreeBuilder item_;
  const std::function<void(const JsonValue&, size_t)>& each_;
  size_t depth_ = 0;  // containers open around the parser, an item's own excluded
  bool next_is_items_ = false, in_items_ = false, item_open_ = false, closed_after_comma_ = false;
  size_t item_start_ = 0, prev_end_ = 0;
  size_t skip_ = 0;                       // items still to drop (the "[]" of a resumed read)
  bool yield_ = false, yielded_ = false;  // see yield_after_an_item
  JsonItems result_;
  std::unordered_set<std::string> root_keys_;
};

void print_to(const JsonValue& v, std::string& out) {
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
      out += string_literal(v.text);
      break;
    case JsonValue::Kind::Array:
      out += '[';
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out += ',';
        print_to(v.items[k], out);
      }
      out += ']';
      break;
    case JsonValue::Kind::Object:
      out += '{';
      for (size_t k = 0; k < v.members.size(); ++k) {
        if (k) out += ',';
        out += string_literal(v.members[k].first);
        out += ':';
        print_to(v.members[k].second, out);
      }
      out += '}';
      break;
  }
}

JsonValue read_value(ByteSource& src, const JsonLimits& limits) {
  ParseFailure fail(src, src.offset());
  TreeBuilder b(fail, limits.max_depth);
  if (!njson::sax_parse(src.begin(), ByteSource::end(), &b, njson::input_format_t::json, true)) fail.raise();
  return b.take();
}

}  // namespace

JsonValue parse_json(const std::string& text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw JsonError(
        1, 1,
        "input of " + std::to_string(text.size()) + " bytes is over the limit of " + std::to_string(limits.max_bytes),
        false);
  ByteSource src(text);
  return read_value(src, limits);
}

namespace {

// How a read of items by the library ended.
enum class LibraryRead { kYielded, kFinished };

// Reads items with nlohmann's parser from src's position: the start of the array (after_item
// false), or just after an item inside it. With one_item, returns kYielded right after the next
// array or object item; otherwise, or at an error, the array's end or a scalar item, reads to the
// end and returns kFinished with *result set (or throws the JsonError).
LibraryRead read_items_by_library(ByteSource& src, const std::string& key, const JsonLimits& limits, bool tolerant,
                                  const std::function<void(const JsonValue&, size_t)>& each_item, bool after_item,
                                  bool one_item, JsonItems* result) {
  static const char kResume[] = "[[]";  // the parser's state inside the array after an item
  const size_t resume_bytes = after_item ? sizeof kResume - 1 : 0;
  ParseFailure fail(src, src.offset() - resume_bytes);  // offsets count the given bytes too
  ItemStreamer s(src, fail, key, limits, tolerant, each_item);
  if (after_item) s.resume_after_an_item();
  if (one_item) s.yield_after_an_item();
  const bool ok =
      njson::sax_parse(src.begin(after_item ? kResume : ""), ByteSource::end(), &s, njson::input_format_t::json, true);
  if (s.yielded()) return LibraryRead::kYielded;
  *result = s.result();
  if (ok || result->cut_short) return LibraryRead::kFinished;
  if (!s.closed_after_comma()) fail.raise();
  src.skip_space();  // after the ']' that closed "[ a, ]"
  if (!src.at_end()) {
    fail.set(src.offset(), "unexpected text after the closing ']'");
    fail.raise();
  }
  return LibraryRead::kFinished;
}

JsonItems read_mostly_plain(ByteSource& src, const JsonLimits& limits, bool tolerant,
                            const std::function<void(const JsonValue&, size_t)>& each_item);

// The items of the array src holds, each object scanned by PlainJsonScanner when it is plain
// JSON and in hand whole, and by the library otherwise (that one item, then the scanner again).
// What lies between items (whitespace, the ',' and the closing ']') is read here only when it is
// exactly ", " or "]" at the end; anything else goes to the library too, so every error, and
// every way a killed writer leaves the file, is the library's reading of the same bytes.
//
// The library, started just after an item, is given "[[]" before the source's bytes: its state
// then is the one it would have there, except for the text its messages quote as "last read"
// (from the last string, number or literal on). So when that read fails, the source is read
// again from the start by the library alone, handing on nothing, for its own message.
JsonItems read_plain_items(ByteSource& src, const JsonLimits& limits, bool tolerant,
                           const std::function<void(const JsonValue&, size_t)>& each_item) {
  const size_t start = src.offset();
  try {
    return read_mostly_plain(src, limits, tolerant, each_item);
  } catch (const JsonError&) {
    src.rewind_to(start);
    JsonItems result;
    read_items_by_library(
        src, "", limits, tolerant, [](const JsonValue&, size_t) {}, false, false, &result);
    throw std::logic_error("read_plain_items: the library read without an error what it failed on before");
  }
}

JsonItems read_mostly_plain(ByteSource& src, const JsonLimits& limits, bool tolerant,
                            const std::function<void(const JsonValue&, size_t)>& each_item) {
  constexpr size_t kWindow = size_t(64) << 10;  // an item longer than this goes to the library
  const PlainJsonScanner scanner(limits.max_depth > 1 ? limits.max_depth - 1 : 0);
  JsonValue item;
  JsonItems result;
  bool after_item = false;  // src is just after an item (else before the array's '[')
  for (;;) {
    const std::string_view w = src.window(kWindow);
    const char* end = w.data() + w.size();
    const char* p = PlainJsonScanner::skip_space(w.data(), end);
    if (p < end && *p == (after_item ? ',' : '[')) {
      p = PlainJsonScanner::skip_space(p + 1, end);
      const char* next = p < end && *p == '{' ? scanner.scan(p, end, item) : nullptr;
      if (next) {
        each_item(item, src.offset() + size_t(p - w.data()));
        src.skip(size_t(next - w.data()));
        after_item = true;
        continue;
      }
    } else if (after_item && p < end && *p == ']' && src.window_is_all() &&
               PlainJsonScanner::skip_space(p + 1, end) == end) {
      src.skip(w.size());
      result.found = true;
      return result;
    }
    if (read_items_by_library(src, "", limits, tolerant, each_item, after_item, true, &result) ==
        LibraryRead::kFinished)
      return result;
    after_item = true;
  }
}

}  // namespace

JsonItems read_json_items(ByteSource& src, const std::string& key, const JsonLimits& limits, bool tolerant,
                          const std::function<void(const JsonValue&, size_t)>& each_item) {
  if (key.empty() && limits.scan_plain) return read_plain_items(src, limits, tolerant, each_item);
  JsonItems result;
  read_items_by_library(src, key, limits, tolerant, each_item, false, false, &result);
  return result;
}

std::string json_to_text(const JsonValue& v) {
  std::string out;
  print_to(v, out);
  return out;
}
