// file_io: the report's thin I/O shells: open an input file, write the output file. Errors come
// back as one line naming the file: "cannot read PATH: reason", "cannot write PATH: reason".
#pragma once
#include <cstddef>
#include <string>

// An input file, open for reading. Only a regular file is read: the open is non-blocking (a FIFO
// without a writer cannot hang it) and anything else is refused by its kind, "cannot read PATH:
// it is a FIFO, not a regular file" (a directory, a character or block device, a socket). A file
// longer than max_bytes is refused too. Closed when the object goes.
class InputFile {
 public:
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();
  // False with error set when path cannot be opened, is not a regular file or is too long.
  bool open(const std::string& path, size_t max_bytes, std::string& error);
  int fd() const { return fd_; }
  size_t size() const { return size_; }  // its length when opened

 private:
  int fd_ = -1;
  size_t size_ = 0;
};

// Writes bytes to path (created or truncated). False with error set on any failure.
bool write_whole_file(const std::string& path, const std::string& bytes, std::string& error);
