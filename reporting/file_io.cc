// file_io: opening an input (regular files only) and writing the output, with one-line messages
// (see reporting/file_io.h).
#include "reporting/file_io.h"
#include "src/safe_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace {

// "cannot read PATH: it is a FIFO, not a regular file" (a directory, a device, a socket).
std::string not_regular(const std::string& path, unsigned mode) {
  const std::string kind = file_kind(mode);
  return "cannot read " + path + ": it is " + (kind.rfind("a ", 0) == 0 ? kind + ", not a regular file" : kind);
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

// The checks are safe_file's (src/safe_file.h); only the words are the report's.
bool InputFile::open(const std::string& path, size_t max_bytes, std::string& error) {
  ReadRefusal no;
  fd_ = try_open_regular_for_read(path, max_bytes, &size_, &no);
  if (fd_ >= 0) return true;
  if (no.mode)  // a socket cannot be opened at all (ENXIO): name what it is rather than the errno
    error = not_regular(path, no.mode);
  else if (no.open_errno || no.check_errno)
    error = "cannot read " + path + ": " + std::strerror(no.open_errno ? no.open_errno : no.check_errno);
  else
    error = "cannot read " + path + ": " + std::to_string(no.size) + " bytes, larger than the limit of " +
            std::to_string(max_bytes >> 20) + " MiB";
  return false;
}

bool write_whole_file(const std::string& path, const std::string& bytes, std::string& error) {
  int fd = -1;
  try {
    fd = create_output_file(path, "report output");  // never through a symlink (src/safe_file.h)
  } catch (const SafeFileError& e) {
    error = e.what();
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot write " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += size_t(n);
  }
  if (::close(fd) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}
