// tagger: splitting a rank's byte stream into lines and the output tags ./launch puts before them.
// Pure code, no I/O.
#pragma once
#include <cstddef>
#include <ctime>
#include <string>
#include <vector>

enum class TagFormat {
  kHorovod,  // "[0]<stdout>:"     what horovodrun prints (the default)
  kMpi,      // "[1,0]<stdout>:"   what mpirun --tag-output prints (1 = job number inside mpirun)
  kShort,    // "[0]:"
  kHost,     // "[hpc01:0]<stdout>:"
};
enum class Stream { kStdout, kStderr };

// "horovod", "mpi", "short", "host" -> format; false for anything else.
bool parse_tag_format(const std::string& name, TagFormat* out);
std::string make_tag(TagFormat format, int rank, Stream stream, const std::string& host);

// One line of a stream: its bytes without the terminator, and the terminator as it was written:
// "\n", "\r", "\r\n", or "" for a last fragment at end of stream (or a line cut at max_line).
// continuation: an "\n" that followed an "\r" already emitted by flush_cr() (text is empty);
// a console sink skips it, a file sink writes it so files keep the bytes exactly. With at_eof (and
// end ""), the stream ended right after that flushed '\r' line: a console sink ends it with '\n'.
// at_eof: the stream ended right after this line (a console sink ends a '\r' line with '\n' then,
// so the next line does not overwrite it).
// cut: the line was longer than max_line and this piece ends at the cut (end ""); the next piece
// continues it. A console sink marks the cut with kCutMarker; files keep the bytes as they were.
struct Line {
  std::string text;
  std::string end;
  bool continuation = false;
  bool at_eof = false;
  bool cut = false;
};
constexpr const char* kCutMarker = " [launch: line longer than 64 MiB cut here; it continues on the next line]";

// Splits on '\n' and on '\r' ("\r\n" counts as one terminator), keeping arbitrary bytes (NUL, invalid
// UTF-8) untouched. feed() may receive a line in any number of pieces. A '\r' at the very end of
// the data fed so far is held back until the next byte shows whether '\n' follows (or until
// flush_cr() / finish()). A line longer than max_line is emitted in max_line pieces with end "".
class LineSplitter {
 public:
  explicit LineSplitter(bool split_on_cr = true, size_t max_line = kDefaultMaxLine)
      : split_cr_(split_on_cr), max_line_(max_line) {}
  static constexpr size_t kDefaultMaxLine = 64u << 20;

  void feed(const char* data, size_t n, std::vector<Line>* out);
  // End of stream: emits the pending fragment (end "") or a held '\r' line.
  void finish(std::vector<Line>* out);
  // True while a line ended by '\r' waits to see whether '\n' follows.
  bool has_pending_cr() const { return pending_cr_; }
  // Emits the held '\r' line now (end "\r"); a '\n' arriving next becomes a continuation line.
  void flush_cr(std::vector<Line>* out);
  // Bytes of the incomplete line held so far.
  size_t buffered() const { return buf_.size(); }

 private:
  void emit(const char* end, bool cut, std::vector<Line>* out);
  size_t finish_held_cr(const char* data, size_t n, std::vector<Line>* out);
  size_t next_terminator(const char* data, size_t i, size_t n) const;
  void append_text(const char* text, size_t len, std::vector<Line>* out);
  size_t end_line(const char* data, size_t i, size_t n, std::vector<Line>* out);

  std::string buf_;
  bool pending_cr_ = false;  // buf_ is a complete line whose '\r' arrived last
  bool skip_lf_ = false;     // the '\r' line was flushed already; a leading '\n' is a continuation
  bool split_cr_;
  size_t max_line_;
};

// "Mon Jan  2 15:04:05 2006" (asctime in local time), which horovodrun's
// --prefix-output-with-timestamp puts right before the tag, with no space: "...2006[0]<stdout>:".
std::string timestamp_prefix(std::time_t t);

// Parses a line mpirun --tag-output printed: "[1,R]<stdout>:text" / "[1,R]<stderr>:text" /
// "[1,R]<stddiag>:text". On success sets rank, stream (stddiag counts as stderr) and the offset of
// text in line. Anything else (mpirun's own messages) returns false.
bool parse_mpi_tag(const std::string& line, int* rank, Stream* stream, size_t* text_offset);
// The same for a tag starting at line[pos].
bool parse_mpi_tag_at(const std::string& line, size_t pos, int* rank, Stream* stream, size_t* text_offset);
// mpirun does not end a rank's partial last line, so the next rank's tag can follow it on the same
// line: "[1,0]<stdout>:c[1,1]<stdout>:a". Splits such a line into (rank, stream, text) pieces; the
// last piece keeps the line's terminator, earlier ones get end "" (an unterminated line). A tag of
// the same rank and stream as the piece it follows is not a split: Open MPI tags each chunk it reads
// from a rank's pipe, so a line read in two chunks comes as "[1,0]<stdout>:Train ...\t[1,0]<stdout>:
// Loss ...", and the piece goes on across the repeated tag. A line that does not start with a tag
// gives an empty result.
struct MpiPiece {
  int rank;
  Stream stream;
  Line line;
};
std::vector<MpiPiece> split_mpi_line(const Line& line);
