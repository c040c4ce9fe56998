// tagger: line splitting (\n, \r, \r\n, partial reads, long lines), output tags and mpirun tag parsing.
#include "launcher/tagger.h"

#include <cstring>

bool parse_tag_format(const std::string& name, TagFormat* out) {
  if (name == "horovod")
    *out = TagFormat::kHorovod;
  else if (name == "mpi")
    *out = TagFormat::kMpi;
  else if (name == "short")
    *out = TagFormat::kShort;
  else if (name == "host")
    *out = TagFormat::kHost;
  else
    return false;
  return true;
}

std::string make_tag(TagFormat format, int rank, Stream stream, const std::string& host) {
  const char* s = stream == Stream::kStdout ? "<stdout>:" : "<stderr>:";
  std::string r = std::to_string(rank);
  switch (format) {
    case TagFormat::kHorovod:
      return "[" + r + "]" + s;
    case TagFormat::kMpi:
      return "[1," + r + "]" + s;
    case TagFormat::kShort:
      return "[" + r + "]:";
    case TagFormat::kHost:
      return "[" + host + ":" + r + "]" + s;
  }
  return "[" + r + "]" + s;
}

void LineSplitter::feed(const char* data, size_t n, std::vector<Line>* out) {
  size_t i = 0;
  if (n == 0) return;
  if (skip_lf_) {
    skip_lf_ = false;
    if (data[0] == '\n') {
      Line l;
      l.end = "\n";
      l.continuation = true;
      out->push_back(std::move(l));
      i = 1;
    }
  }
  if (pending_cr_ && i < n) {
    pending_cr_ = false;
    Line l;
    l.text.swap(buf_);
    if (data[i] == '\n') {
      l.end = "\r\n";
      ++i;
    } else {
      l.end = "\r";
    }
    out->push_back(std::move(l));
  }
  while (i < n) {
    // Find the next terminator in data[i..n).
    size_t j = i;
    if (split_cr_) {
      while (j < n && data[j] != '\n' && data[j] != '\r') ++j;
    } else {
      const void* p = std::memchr(data + i, '\n', n - i);
      j = p ? static_cast<const char*>(p) - data : n;
    }
    // Respect max_line: cut the buffered line if it would grow past it.
    while (buf_.size() + (j - i) > max_line_) {
      size_t take = max_line_ - buf_.size();
      buf_.append(data + i, take);
      i += take;
      Line l;
      l.text.swap(buf_);
      l.cut = true;
      out->push_back(std::move(l));
    }
    buf_.append(data + i, j - i);
    i = j;
    if (i == n) break;
    if (data[i] == '\n') {
      Line l;
      l.text.swap(buf_);
      l.end = "\n";
      out->push_back(std::move(l));
      ++i;
    } else {  // '\r'
      if (i + 1 == n) {
        pending_cr_ = true;  // wait for the next byte
        ++i;
        break;
      }
      Line l;
      l.text.swap(buf_);
      if (data[i + 1] == '\n') {
        l.end = "\r\n";
        i += 2;
      } else {
        l.end = "\r";
        i += 1;
      }
      out->push_back(std::move(l));
    }
  }
}

void LineSplitter::flush_cr(std::vector<Line>* out) {
  if (!pending_cr_) return;
  pending_cr_ = false;
  skip_lf_ = true;
  Line l;
  l.text.swap(buf_);
  l.end = "\r";
  out->push_back(std::move(l));
}

void LineSplitter::finish(std::vector<Line>* out) {
  skip_lf_ = false;
  if (pending_cr_) {
    pending_cr_ = false;
    Line l;
    l.text.swap(buf_);
    l.end = "\r";
    l.at_eof = true;
    out->push_back(std::move(l));
    return;
  }
  if (!buf_.empty()) {
    Line l;
    l.text.swap(buf_);
    l.at_eof = true;
    out->push_back(std::move(l));
  }
}

std::string timestamp_prefix(std::time_t t) {
  struct tm tmv;
  localtime_r(&t, &tmv);
  char buf[64];
  // asctime format without the trailing newline.
  if (std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tmv) == 0) return "";
  return buf;
}

bool parse_mpi_tag(const std::string& line, int* rank, Stream* stream, size_t* text_offset) {
  return parse_mpi_tag_at(line, 0, rank, stream, text_offset);
}

bool parse_mpi_tag_at(const std::string& line, size_t pos, int* rank, Stream* stream, size_t* text_offset) {
  // "[" digits "," digits "]<" ("stdout"|"stderr"|"stddiag") ">:"
  size_t i = pos, n = line.size();
  if (n < pos + 4 || line[pos] != '[') return false;
  i = pos + 1;
  size_t start = i;
  while (i < n && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == start || i >= n || line[i] != ',') return false;
  ++i;
  start = i;
  long r = 0;
  while (i < n && line[i] >= '0' && line[i] <= '9') {
    r = r * 10 + (line[i] - '0');
    if (r > 100000000) return false;
    ++i;
  }
  if (i == start || i >= n || line[i] != ']') return false;
  ++i;
  static const struct {
    const char* tag;
    Stream stream;
  } kTags[] = {{"<stdout>:", Stream::kStdout}, {"<stderr>:", Stream::kStderr}, {"<stddiag>:", Stream::kStderr}};
  for (const auto& t : kTags) {
    size_t len = std::strlen(t.tag);
    if (line.compare(i, len, t.tag) == 0) {
      *rank = static_cast<int>(r);
      *stream = t.stream;
      *text_offset = i + len;
      return true;
    }
  }
  return false;
}

std::vector<MpiPiece> split_mpi_line(const Line& line) {
  std::vector<MpiPiece> out;
  int rank;
  Stream stream;
  size_t off;
  if (!parse_mpi_tag(line.text, &rank, &stream, &off)) return out;
  const std::string& t = line.text;
  while (true) {
    // Look for the next embedded tag after off.
    size_t search = off, next = std::string::npos;
    int nrank = 0;
    Stream nstream = Stream::kStdout;
    size_t noff = 0;
    while (true) {
      size_t b = t.find('[', search);
      if (b == std::string::npos) break;
      if (parse_mpi_tag_at(t, b, &nrank, &nstream, &noff)) {
        next = b;
        break;
      }
      search = b + 1;
    }
    MpiPiece piece{rank, stream, Line()};
    if (next == std::string::npos) {
      piece.line.text = t.substr(off);
      piece.line.end = line.end;
      out.push_back(std::move(piece));
      return out;
    }
    piece.line.text = t.substr(off, next - off);
    out.push_back(std::move(piece));
    rank = nrank;
    stream = nstream;
    off = noff;
  }
}
