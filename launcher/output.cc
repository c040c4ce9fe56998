// output: tagged console output and --output-filename files for ./launch (see output.h).
#include "launcher/output.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "launcher/fdio.h"

namespace {

void make_dirs(const std::string& path) {
  std::string cur;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    cur = path.substr(0, slash == std::string::npos ? path.size() : slash);
    if (!cur.empty()) {
      if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error("--output-filename: cannot create " + cur + ": " + std::strerror(errno));
      struct stat st;
      if (stat(cur.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error("--output-filename: " + cur + " is not a directory");
    }
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
}

}  // namespace

OutputSink::OutputSink(TagFormat format, bool timestamp, int out_fd, int err_fd)
    : format_(format), timestamp_(timestamp), out_fd_(out_fd), err_fd_(err_fd) {}

OutputSink::~OutputSink() {
  flush();
  for (RankFiles& f : files_)
    for (int s = 0; s < 2; ++s)
      if (f.fd[s] >= 0) close(f.fd[s]);
}

// horovodrun's rank directory name: the rank zero-padded to the digits of the last rank, so the
// directories sort (rank.00 .. rank.11 for 12 ranks).
std::string padded_rank(int rank, int nranks) {
  std::string r = std::to_string(rank), last = std::to_string(nranks > 1 ? nranks - 1 : 0);
  return std::string(last.size() > r.size() ? last.size() - r.size() : 0, '0') + r;
}

void OutputSink::open_files(const std::string& dir, int nranks) {
  make_dirs(dir);
  check_write_dir(dir, "--output-filename");  // the rank directories go here: no other user's
  files_.resize(nranks);
  for (int r = 0; r < nranks; ++r) {
    std::string rd = dir + "/rank." + padded_rank(r, nranks);
    make_dirs(rd);
    const char* names[2] = {"stdout", "stderr"};
    for (int s = 0; s < 2; ++s) {
      std::string p = rd + "/" + names[s];
      // Never through a symlink, never in a directory another user can write (src/safe_file.h).
      int fd = create_output_file(p, "--output-filename file");
      files_[r].fd[s] = fd;
      files_[r].path[s] = p;
    }
  }
}

void OutputSink::append_console(Stream stream, const std::string& s) {
  (stream == Stream::kStdout ? out_buf_ : err_buf_) += s;
}

void OutputSink::emit(int rank, Stream stream, const Line& line) {
  int si = stream == Stream::kStdout ? 0 : 1;
  if (rank >= 0 && rank < static_cast<int>(files_.size()) && files_[rank].fd[si] >= 0) {
    std::string& b = files_[rank].buf[si];
    b += line.text;
    b += line.end;
    file_pending_ += line.text.size() + line.end.size();
  }
  if (line.continuation) {
    if (line.at_eof) append_console(stream, "\n");  // the stream ended after a '\r' line shown earlier
    return;
  }
  std::string host = rank >= 0 && rank < static_cast<int>(hosts_.size()) ? hosts_[rank] : "?";
  std::string& buf = stream == Stream::kStdout ? out_buf_ : err_buf_;
  if (timestamp_) buf += timestamp_prefix(std::time(nullptr));
  buf += make_tag(format_, rank, stream, host);
  buf += line.text;
  if (line.cut) buf += kCutMarker;  // the rest follows on the next tagged line, nothing is lost
  buf += line.end.empty() ? "\n" : line.end;
  if (line.at_eof && line.end == "\r") buf += "\n";
  if (pending() > (1u << 20) || file_pending_ > (1u << 20)) flush();
}

void OutputSink::raw(Stream stream, const std::string& text) {
  append_console(stream, text);
  if (pending() > (1u << 20)) flush();
}

void OutputSink::message(const std::string& msg) {
  flush();
  std::string line = msg + "\n";
  if (!err_broken_ && !write_all(err_fd_, line)) err_broken_ = true;
}

void OutputSink::flush_files() {
  for (RankFiles& f : files_) {
    for (int s = 0; s < 2; ++s) {
      if (f.buf[s].empty()) continue;
      if (f.fd[s] >= 0 && !write_all(f.fd[s], f.buf[s])) {
        int e = errno;
        if (file_error_.empty()) {
          file_error_ =
              "launch: cannot write " + f.path[s] + ": " + std::strerror(e) + "; no more output goes to that file";
          std::string line = file_error_ + "\n";
          if (!err_broken_) write_all(err_fd_, line);
        }
        close(f.fd[s]);
        f.fd[s] = -1;
      }
      f.buf[s].clear();
    }
  }
  file_pending_ = 0;
}

void OutputSink::flush() {
  if (!out_buf_.empty()) {
    if (!out_broken_ && !write_all(out_fd_, out_buf_)) out_broken_ = true;  // e.g. EPIPE: drop
    out_buf_.clear();
  }
  if (!err_buf_.empty()) {
    if (!err_broken_ && !write_all(err_fd_, err_buf_)) err_broken_ = true;
    err_buf_.clear();
  }
  if (file_pending_ > 0) flush_files();
}
