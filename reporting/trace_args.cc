// trace_args: the packed (key, value) pairs of a trace slice (see reporting/trace_args.h).
#include "reporting/trace_args.h"

namespace {

void put_length(std::string& out, size_t n) {
  do {
    const unsigned char low = n & 0x7f;
    n >>= 7;
    out += char(n ? low | 0x80 : low);
  } while (n);
}

// How many bytes put_length writes for n.
size_t length_bytes(size_t n) {
  size_t bytes = 1;
  while (n >>= 7) ++bytes;
  return bytes;
}

size_t get_length(const std::string& in, size_t& at) {
  size_t n = 0;
  for (int shift = 0;; shift += 7) {
    const unsigned char b = static_cast<unsigned char>(in[at++]);
    n |= size_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return n;
  }
}

std::string get_text(const std::string& in, size_t& at) {
  const size_t n = get_length(in, at);
  std::string s = in.substr(at, n);
  at += n;
  return s;
}

}  // namespace

TraceArgs::TraceArgs(std::initializer_list<value_type> args) {
  for (const value_type& kv : args) push_back(kv);
}

void TraceArgs::append(std::string_view key, std::string_view value) {
  put_length(packed_, key.size());
  packed_ += key;
  put_length(packed_, value.size());
  packed_ += value;
  ++count_;
}

size_t TraceArgs::pair_bytes(std::string_view key, std::string_view value) {
  return length_bytes(key.size()) + key.size() + length_bytes(value.size()) + value.size();
}

TraceArgs::value_type TraceArgs::operator[](size_t i) const {
  const_iterator it = begin();
  for (; i > 0; --i) ++it;
  return *it;
}

TraceArgs::value_type TraceArgs::const_iterator::operator*() const {
  size_t at = at_;
  std::string key = get_text(*packed_, at);
  return {std::move(key), get_text(*packed_, at)};
}

TraceArgs::const_iterator& TraceArgs::const_iterator::operator++() {
  for (int part = 0; part < 2; ++part) {  // the key, then the value
    const size_t n = get_length(*packed_, at_);
    at_ += n;
  }
  return *this;
}
