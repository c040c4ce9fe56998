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
  if (n == 0) return;
  size_t i = finish_held_cr(data, n, out);
  while (i < n) {
    size_t j = next_terminator(data, i, n);
    append_text(data + i, j - i, out);
    i = j;
    if (i < n) i = end_line(data, i, n, out);
  }
}

// Emits the buffered text as one line.
void LineSplitter::emit(const char* end, bool cut, std::vector<Line>* out) {
  Line l;
  l.text.swap(buf_);
  l.end = end;
  l.cut = cut;
  out->push_back(std::move(l));
}

// The first bytes of a read after a '\r' ended the last one: a '\n' there completes "\r\n" (or is
// a continuation line when the '\r' line was flushed already). Returns where the rest starts.
size_t LineSplitter::finish_held_cr(const char* data, size_t n, std::vector<Line>* out) {
  size_t i = 0;
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
    bool crlf = data[i] == '\n';
    emit(crlf ? "\r\n" : "\r", false, out);
    if (crlf) ++i;
  }
  return i;
}

// The next terminator in data[i..n) ('\n', or '\r' too when splitting on it), else n.
size_t LineSplitter::next_terminator(const char* data, size_t i, size_t n) const {
  if (split_cr_) {
    while (i < n && data[i] != '\n' && data[i] != '\r') ++i;
    return i;
  }
  const void* p = std::memchr(data + i, '\n', n - i);
  return p ? static_cast<const char*>(p) - data : n;
}

// Buffers text of the current line, cutting the line each time it would grow past max_line.
void LineSplitter::append_text(const char* text, size_t len, std::vector<Line>* out) {
  while (buf_.size() + len > max_line_) {
    size_t take = max_line_ - buf_.size();
    buf_.append(text, take);
    text += take;
    len -= take;
    emit("", true, out);
  }
  buf_.append(text, len);
}

// Ends the buffered line at the terminator data[i]; returns the index after it. A '\r' that is
// the read's last byte is held (pending_cr_) until the next byte says whether "\r\n" it is.
size_t LineSplitter::end_line(const char* data, size_t i, size_t n, std::vector<Line>* out) {
  if (data[i] == '\n') {
    emit("\n", false, out);
    return i + 1;
  }
  if (i + 1 == n) {
    pending_cr_ = true;
    return n;
  }
  bool crlf = data[i + 1] == '\n';
  emit(crlf ? "\r\n" : "\r", false, out);
  return i + (crlf ? 2 : 1);
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
  if (skip_lf_) {
    // The stream ended right after a '\r' line flush_cr() emitted already: an empty continuation
    // at end of stream, so a console ends that line as it ends an at_eof '\r' line.
    Line l;
    l.continuation = true;
    l.at_eof = true;
    out->push_back(std::move(l));
  }
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
  MpiPiece piece{rank, stream, Line()};
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
    if (next == std::string::npos) {
      piece.line.text += t.substr(off);
      piece.line.end = line.end;
      out.push_back(std::move(piece));
      return out;
    }
    piece.line.text += t.substr(off, next - off);
    if (nrank != rank || nstream != stream) {  // another rank's (or stream's) line begins here
      out.push_back(std::move(piece));
      piece = MpiPiece{nrank, nstream, Line()};
    }
    rank = nrank;
    stream = nstream;
    off = noff;
  }
}
