// fuzz_tagger: libFuzzer target for ./launch's output handling (launcher/tagger.h): the line
// splitter every rank's stream goes through, and the parser of mpirun --tag-output lines
// (parse_mpi_tag, parse_mpi_tag_at, split_mpi_line).
//
// Input: byte 0 = flags (bit 0: split on '\r' too; bits 1-2: max_line 1 / 7 / 64 / default;
// bits 3-7: chunking seed), then the stream.
// Contract checked:
//   LineSplitter, fed the stream in arbitrary pieces with flush_cr() called at arbitrary points,
//     returns lines whose text + end, concatenated, is exactly the stream (continuation lines
//     carrying the '\n' after a flushed '\r'); no text holds a terminator or is longer than
//     max_line; ends are "", "\n", "\r", "\r\n"; at most max_line bytes stay buffered.
//   split_mpi_line on every line: empty unless the line starts with a tag; pieces keep the line's
//     text minus the tags, the last piece gets the line's end, the others "".
//   parse_mpi_tag on a tag made by make_tag(kMpi, r, stream) + text gives back r, the stream
//     and the tag's length; on arbitrary bytes it never reads past the end and reports a rank
//     in range and an offset inside the line.
//
// Build: make fuzz (build-fuzz/fuzz_tagger); run: .ci/fuzz.sh
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/tagger.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

void check_mpi_line(const Line& l) {
  int rank = -1;
  Stream stream;
  size_t off = 0;
  const bool tagged = parse_mpi_tag(l.text, &rank, &stream, &off);
  if (tagged) {
    FUZZ_CHECK(off <= l.text.size());
    FUZZ_CHECK(rank >= 0 && rank <= 1000000009);
  }
  const std::vector<MpiPiece> pieces = split_mpi_line(l);
  FUZZ_CHECK(pieces.empty() == !tagged);
  if (pieces.empty()) return;
  FUZZ_CHECK(pieces[0].rank == rank && pieces[0].stream == stream);
  size_t text_bytes = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    FUZZ_CHECK(pieces[k].line.end == (k + 1 == pieces.size() ? l.end : std::string()));
    // A repeated tag of the same rank and stream continues the piece: neighbours differ.
    if (k > 0) FUZZ_CHECK(pieces[k].rank != pieces[k - 1].rank || pieces[k].stream != pieces[k - 1].stream);
    text_bytes += pieces[k].line.text.size();
  }
  FUZZ_CHECK(text_bytes <= l.text.size() - off);
  // With no '[' after the tag there is no embedded tag: one piece, the rest of the line.
  if (l.text.find('[', off) == std::string::npos)
    FUZZ_CHECK(pieces.size() == 1 && pieces[0].line.text == l.text.substr(off));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const bool split_cr = flags & 1;
  static const size_t kMax[] = {1, 7, 64, LineSplitter::kDefaultMaxLine};
  const size_t max_line = kMax[(flags >> 1) & 3];
  const std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  LineSplitter sp(split_cr, max_line);
  std::vector<Line> lines;
  FuzzRng rng{0x2545F491u ^ (uint32_t(flags >> 3) * 0x9E3779B9u)};
  size_t pos = 0;
  while (pos < stream.size()) {
    const uint32_t r = rng.next();
    size_t n = (r & 7) == 0 ? 0 : 1 + (r >> 8) % ((r & 8) ? 3 : 40);
    n = std::min(n, stream.size() - pos);
    sp.feed(stream.data() + pos, n, &lines);
    pos += n;
    FUZZ_CHECK(sp.buffered() <= max_line);
    if ((rng.next() & 15) == 0) sp.flush_cr(&lines);
    FUZZ_CHECK(!sp.has_pending_cr() || split_cr);
  }
  sp.finish(&lines);
  FUZZ_CHECK(!sp.has_pending_cr() && sp.buffered() == 0);

  std::string joined;
  for (size_t k = 0; k < lines.size(); ++k) {
    const Line& l = lines[k];
    FUZZ_CHECK(l.end.empty() || l.end == "\n" || l.end == "\r" || l.end == "\r\n");
    FUZZ_CHECK(l.text.size() <= max_line);
    FUZZ_CHECK(l.text.find('\n') == std::string::npos);
    if (split_cr)
      FUZZ_CHECK(l.text.find('\r') == std::string::npos);
    else
      FUZZ_CHECK(l.end != "\r" && l.end != "\r\n");
    // A continuation: the '\n' after a '\r' line flush_cr() emitted, or (at_eof, end "") the end
    // of the stream right after such a line.
    if (l.continuation)
      FUZZ_CHECK(l.text.empty() && (l.end == "\n" || (l.end.empty() && l.at_eof)) && k > 0 && lines[k - 1].end == "\r");
    if (l.at_eof) FUZZ_CHECK(k + 1 == lines.size());
    // An empty end means a cut long line or the stream's last fragment.
    if (l.end.empty()) FUZZ_CHECK(l.text.size() == max_line || k + 1 == lines.size());
    joined += l.text + l.end;
    check_mpi_line(l);
  }
  FUZZ_CHECK(joined == stream);

  // Tags made by make_tag parse back, whatever text follows.
  const int rank = int(size * 2654435761u % 100000000u);
  for (Stream st : {Stream::kStdout, Stream::kStderr}) {
    const std::string tag = make_tag(TagFormat::kMpi, rank, st, "h");
    int r = -1;
    Stream got;
    size_t off = 0;
    FUZZ_CHECK(parse_mpi_tag(tag + stream, &r, &got, &off));
    FUZZ_CHECK(r == rank && got == st && off == tag.size());
    Line l;
    l.text = "x" + tag + stream;  // a line that does not start with a tag is mpirun's own
    l.end = "\n";
    FUZZ_CHECK(split_mpi_line(l).empty());
  }
  return 0;
}
