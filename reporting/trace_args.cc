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

void TraceArgs::push_back(const value_type& kv) {
  put_length(packed_, kv.first.size());
  packed_ += kv.first;
  put_length(packed_, kv.second.size());
  packed_ += kv.second;
  ++count_;
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
