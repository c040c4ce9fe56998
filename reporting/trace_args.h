// trace_args: one trace slice's args as (key, value text) pairs in file order, packed into one
// string. A trace holds millions of slices, and a std::vector of string pairs costs 64 bytes a
// pair before any text; packed, a slice's "step" arg fits in the string's own 15 bytes. Reads like
// a std::vector<std::pair<std::string, std::string>>: size(), [], back(), and range-for, which
// yields each pair by value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

class TraceArgs {
 public:
  using value_type = std::pair<std::string, std::string>;

  TraceArgs() = default;
  TraceArgs(std::initializer_list<value_type> args);
  void push_back(const value_type& kv) { append(kv.first, kv.second); }
  void append(std::string_view key, std::string_view value);
  // The packed bytes one pair takes: reserve(the sum over the pairs) before appending them
  // leaves no spare capacity.
  static size_t pair_bytes(std::string_view key, std::string_view value);
  void reserve(size_t bytes) { packed_.reserve(bytes); }
  // Gives back the string's spare capacity (after the last push_back).
  void shrink_to_fit() { packed_.shrink_to_fit(); }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  value_type operator[](size_t i) const;  // walks from the first: O(i)
  value_type back() const { return (*this)[count_ - 1]; }
  bool operator==(const TraceArgs& o) const { return packed_ == o.packed_; }
  bool operator!=(const TraceArgs& o) const { return packed_ != o.packed_; }

  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = TraceArgs::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = value_type;
    const_iterator(const std::string* packed, size_t at) : packed_(packed), at_(at) {}
    value_type operator*() const;
    const_iterator& operator++();
    bool operator==(const const_iterator& o) const { return at_ == o.at_; }
    bool operator!=(const const_iterator& o) const { return at_ != o.at_; }

   private:
    const std::string* packed_;
    size_t at_;  // byte offset of the pair in packed_
  };
  const_iterator begin() const { return const_iterator(&packed_, 0); }
  const_iterator end() const { return const_iterator(&packed_, packed_.size()); }

 private:
  std::string packed_;  // per pair: key length, key, value length, value (lengths as LEB128)
  uint32_t count_ = 0;
};
