// file_io: opening an input (regular files only) and writing the output, with one-line messages
// (see reporting/file_io.h).
#include "reporting/file_io.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace {

// What a path that is not a regular file is, for the one-line refusal.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string not_regular(const std::string& path, mode_t mode) {
  const std::string kind = kind_of(mode);
  return "cannot read " + path + ": it is " + (kind.rfind("a ", 0) == 0 ? kind + ", not a regular file" : kind);
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool InputFile::open(const std::string& path, size_t max_bytes, std::string& error) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st {};
  if (fd_ < 0) {
    const int open_errno = errno;
    // A socket cannot be opened at all (ENXIO): name what it is rather than the errno.
    error = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)
                ? not_regular(path, st.st_mode)
                : "cannot read " + path + ": " + std::strerror(open_errno);
    return false;
  }
  if (::fstat(fd_, &st) != 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = not_regular(path, st.st_mode);
    return false;
  }
  size_ = size_t(st.st_size);
  if (size_ > max_bytes) {
    error = "cannot read " + path + ": " + std::to_string(size_) + " bytes, larger than the limit of " +
            std::to_string(max_bytes >> 20) + " MiB";
    return false;
  }
  return true;
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
