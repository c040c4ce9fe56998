// file_io: whole-file read and write with errno-based one-line messages (see reporting/file_io.h).
#include "reporting/file_io.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

bool read_whole_file(const std::string& path, size_t max_bytes, std::string& out, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    error = "cannot read " + path + ": " + std::strerror(EISDIR);
    return false;
  }
  out.clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    if (out.size() + size_t(n) > max_bytes) {
      error = "cannot read " + path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB";
      ::close(fd);
      return false;
    }
    out.append(buf, size_t(n));
  }
  ::close(fd);
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
