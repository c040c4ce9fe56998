// byte_source: the bytes the report's readers parse, read front to back: either text already in
// memory (the pure parsers, tests, fuzzers) or an open regular file read in 1 MiB chunks, so a
// large trace is never held whole. The JSON layer (reporting/json.h) reads it through an input
// iterator, and its plain scanner through a window of the bytes in hand; the readers skip
// whitespace and read lines with it. Positions are byte offsets from
// the start; line_column turns one into "line L, column C" (for an error: it rereads a file's
// head, so it costs a pass over the bytes before that offset, once).
#pragma once
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

class ByteSource {
 public:
  // Over text in memory; text must outlive the source.
  explicit ByteSource(std::string_view text);
  // Over the first `size` bytes of the regular file open on fd (not closed here), named `name`
  // in errors. A read that fails throws std::runtime_error("cannot read NAME: reason").
  ByteSource(int fd, size_t size, std::string name);
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool at_end() { return p_ == end_ && !refill(); }
  // The next byte (as unsigned char); only when !at_end().
  unsigned char peek() const { return static_cast<unsigned char>(*p_); }
  void advance() { ++p_; }
  size_t offset() const { return base_ + size_t(p_ - buf_begin_); }
  size_t size() const { return size_; }

  // The bytes in hand from the next one on: at least min(want, what is left of the source) of
  // them (a file's are read on, the unread ones moved to the front of the buffer when needed;
  // want is at most the 1 MiB buffer). skip(n) then moves on n of them.
  std::string_view window(size_t want);
  void skip(size_t n) { p_ += n; }
  // Whether the bytes in hand run to the end of the source.
  bool window_is_all() const { return base_ + size_t(end_ - buf_begin_) >= size_; }

  // Goes back (or on) to offset (<= size()): the next byte read is that one.
  void rewind_to(size_t offset);

  // Skips JSON whitespace (space, tab, CR, LF).
  void skip_space();
  // The bytes up to the next '\n' (not included; a '\r' before it dropped) into line; false when
  // the source is at its end. *ended is whether a '\n' ended the line (false for a last line
  // without one).
  bool read_line(std::string& line, bool* ended);
  // 1-based line and column (in bytes) of offset (<= size()).
  std::pair<int, int> line_column(size_t offset) const;
  // The bytes [from, to) again (to <= offset(); a file's are reread).
  std::string bytes(size_t from, size_t to) const;

  // An input iterator over the remaining bytes for nlohmann's parser: it reads from the source
  // and advances it, so the source is left just after what the parser consumed.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = char;
    Iterator() = default;  // the end
    // prefix: bytes given before the source's (a C string that outlives the iterator).
    explicit Iterator(ByteSource* s, const char* prefix = "") : s_(s), prefix_(prefix) {}
    char operator*() const { return *prefix_ ? *prefix_ : char(s_->peek()); }
    Iterator& operator++() {
      step();
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      step();
      return old;
    }
    // Only comparisons with the end are meaningful: equal when the source is exhausted.
    bool operator==(const Iterator& o) const { return done() == o.done(); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    bool done() const { return !s_ || (!*prefix_ && s_->at_end()); }
    void step() {
      if (*prefix_)
        ++prefix_;
      else
        s_->advance();
    }
    ByteSource* s_ = nullptr;
    const char* prefix_ = "";
  };
  Iterator begin(const char* prefix = "") { return Iterator(this, prefix); }
  static Iterator end() { return Iterator(); }

 private:
  bool refill();
  size_t read_into(char* to, size_t want);

  const char* p_ = nullptr;          // the next byte
  const char* end_ = nullptr;        // end of the bytes in hand
  const char* buf_begin_ = nullptr;  // offset() counts from here
  size_t base_ = 0;                  // offset of buf_begin_
  size_t size_ = 0;                  // every byte the source holds
  int fd_ = -1;                      // -1: text in memory
  std::string name_;
  std::vector<char> buf_;
  std::string_view text_;
};
