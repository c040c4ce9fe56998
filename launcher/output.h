// output: where ./launch writes rank lines — tagged to its own stdout/stderr (whole lines only, so
// ranks never interleave mid-line), optionally with a timestamp, and untagged to
// DIR/rank.N/{stdout,stderr} with --output-filename (N zero-padded, as horovodrun's).
#pragma once
#include <string>
#include <vector>

#include "launcher/tagger.h"

// "7" for rank 7 of 8, "07" of 12: the rank padded with zeros to the width of the last rank.
std::string padded_rank(int rank, int nranks);

class OutputSink {
 public:
  OutputSink(TagFormat format, bool timestamp, int out_fd = 1, int err_fd = 2);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  // Host name of each rank, for --tag-format host.
  void set_hosts(const std::vector<std::string>& host_of_rank) { hosts_ = host_of_rank; }
  // Creates DIR/rank.N/stdout and stderr for ranks 0..nranks-1 (truncating old ones). Throws
  // std::runtime_error naming the path that could not be created or opened.
  void open_files(const std::string& dir, int nranks);

  // One line of a rank's stream (buffered until flush()).
  void emit(int rank, Stream stream, const Line& line);
  // Untagged text to the launcher's stdout/stderr (e.g. mpirun's own messages).
  void raw(Stream stream, const std::string& text);
  // A message of the launcher's own: flushes pending rank output first, then writes msg + "\n"
  // to stderr at once.
  void message(const std::string& msg);
  // Writes everything buffered.
  void flush();
  // Bytes waiting; callers flush when it grows.
  size_t pending() const { return out_buf_.size() + err_buf_.size(); }
  // First error writing the --output-filename files (e.g. disk full), empty if none.
  const std::string& file_error() const { return file_error_; }

 private:
  struct RankFiles {
    int fd[2] = {-1, -1};
    std::string path[2];
    std::string buf[2];
  };
  void flush_files();
  void append_console(Stream stream, const std::string& s);
  TagFormat format_;
  bool timestamp_;
  int out_fd_, err_fd_;
  bool out_broken_ = false, err_broken_ = false;
  std::string out_buf_, err_buf_;
  std::vector<std::string> hosts_;
  std::vector<RankFiles> files_;
  size_t file_pending_ = 0;
  std::string file_error_;
};
