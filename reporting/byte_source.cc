// byte_source: chunked front-to-back reading of text or a file (see reporting/byte_source.h).
#include "reporting/byte_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace {
constexpr size_t kChunk = size_t(1) << 20;
}

ByteSource::ByteSource(std::string_view text)
    : p_(text.data()), end_(text.data() + text.size()), buf_begin_(text.data()), size_(text.size()), text_(text) {}

ByteSource::ByteSource(int fd, size_t size, std::string name) : size_(size), fd_(fd), name_(std::move(name)) {
  buf_.resize(std::min(kChunk, std::max<size_t>(size, 1)));
  p_ = end_ = buf_begin_ = buf_.data();
}

// Reads up to want bytes of the file from offset base_ + (to - buf_begin_) into to; how many it
// read (fewer only at the end: a file that shrank while read ends there).
size_t ByteSource::read_into(char* to, size_t want) {
  const size_t from = base_ + size_t(to - buf_begin_);
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd_, to + got, want - got, off_t(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot read " + name_ + ": " + std::strerror(errno));
    if (n == 0) {
      size_ = from + got;  // the file shrank while being read: its end is here
      break;
    }
    got += size_t(n);
  }
  return got;
}

// Reads the next chunk of the file (at most up to size_); false at the end.
bool ByteSource::refill() {
  if (fd_ < 0) return false;
  base_ += size_t(end_ - buf_begin_);
  p_ = end_ = buf_begin_ = buf_.data();
  const size_t got = read_into(buf_.data(), std::min(buf_.size(), size_ - base_));
  end_ = buf_begin_ + got;
  return got > 0;
}

std::string_view ByteSource::window(size_t want) {
  if (size_t(end_ - p_) < want && fd_ >= 0 && !window_is_all()) {
    const size_t kept = size_t(end_ - p_);
    std::memmove(buf_.data(), p_, kept);
    base_ += size_t(p_ - buf_begin_);
    p_ = buf_begin_ = buf_.data();
    end_ = p_ + kept;
    end_ += read_into(buf_.data() + kept, std::min(buf_.size() - kept, size_ - base_ - kept));
  }
  return std::string_view(p_, size_t(end_ - p_));
}

void ByteSource::rewind_to(size_t offset) {
  offset = std::min(offset, size_);
  if (fd_ < 0) {
    p_ = text_.data() + offset;
    return;
  }
  base_ = offset;  // nothing in hand: the next read starts there
  p_ = end_ = buf_begin_ = buf_.data();
}

void ByteSource::skip_space() {
  while (!at_end()) {
    const unsigned char c = peek();
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    advance();
  }
}

bool ByteSource::read_line(std::string& line, bool* ended) {
  line.clear();
  *ended = false;
  if (at_end()) return false;
  while (!at_end()) {
    const char* nl = static_cast<const char*>(std::memchr(p_, '\n', size_t(end_ - p_)));
    if (nl) {
      line.append(p_, size_t(nl - p_));
      p_ = nl + 1;
      *ended = true;
      break;
    }
    line.append(p_, size_t(end_ - p_));
    p_ = end_;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

std::pair<int, int> ByteSource::line_column(size_t offset) const {
  offset = std::min(offset, size_);
  int line = 1;
  size_t line_start = 0;
  auto scan = [&](const char* data, size_t n, size_t at) {
    for (const char* q = data; (q = static_cast<const char*>(std::memchr(q, '\n', size_t(data + n - q)))); ++q) {
      ++line;
      line_start = at + size_t(q - data) + 1;
    }
  };
  if (fd_ < 0) {
    scan(text_.data(), offset, 0);
  } else {
    std::vector<char> buf(kChunk);
    for (size_t at = 0; at < offset;) {
      const ssize_t n = ::pread(fd_, buf.data(), std::min(buf.size(), offset - at), off_t(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      scan(buf.data(), size_t(n), at);
      at += size_t(n);
    }
  }
  return {line, int(offset - line_start) + 1};
}

std::string ByteSource::bytes(size_t from, size_t to) const {
  to = std::min(to, size_);
  if (from >= to) return "";
  if (fd_ < 0) return std::string(text_.substr(from, to - from));
  std::string out(to - from, '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd_, &out[got], out.size() - got, off_t(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
  }
  out.resize(got);
  return out;
}
