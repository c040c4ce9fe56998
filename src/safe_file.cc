// safe_file: regular-file reads with a size bound, and writes that never follow a symlink nor
// land in a directory another user controls (see safe_file.h).
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, const std::string& why) {
  throw SafeFileError(path + ": " + what + " " + why);
}

std::string octal_mode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

void clear_nonblock(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// The directory part of PATH ("." when it has none) and its last component.
void split_path(const std::string& path, std::string* dir, std::string* base) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    *dir = ".";
    *base = path;
  } else {
    *dir = slash == 0 ? "/" : path.substr(0, slash);
    *base = path.substr(slash + 1);
  }
}

// DIR opened as a directory after its own checks: a symlink in its place must belong to the
// caller or root, and the directory itself must pass unsafe_dir_reason. A directory that cannot
// be opened is named through FILE when one is given (the file that cannot be created in it).
int open_checked_dir(const std::string& dir, const std::string& what, const std::string& file = "") {
  struct stat link;
  if (::lstat(dir.c_str(), &link) != 0 && !file.empty())
    fail(file, what, std::string("cannot be created: ") + std::strerror(errno));
  if (::lstat(dir.c_str(), &link) != 0) fail(dir, what, std::string("directory: ") + std::strerror(errno));
  if (S_ISLNK(link.st_mode) && link.st_uid != ::geteuid() && link.st_uid != 0)
    fail(dir, what, "directory is a symlink owned by another user (uid " + std::to_string(link.st_uid) + ")");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail(dir, what, std::string("directory: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(dfd, &st) != 0) {
    ::close(dfd);
    fail(dir, what, std::string("directory: ") + std::strerror(errno));
  }
  const std::string why = unsafe_dir_reason(st.st_uid, st.st_mode, ::geteuid());
  if (!why.empty()) {
    ::close(dfd);
    fail(dir, what, "directory " + why + "; refusing to write there");
  }
  return dfd;
}

// Why the open file fd is not a regular file ("" when it is; *st is its stat then).
std::string not_regular(int fd, struct stat* st) {
  if (::fstat(fd, st) != 0) return std::string("cannot be checked: ") + std::strerror(errno);
  if (!S_ISREG(st->st_mode)) return "is " + file_kind(st->st_mode) + ", not a regular file";
  return "";
}

// PATH opened for writing (access: O_WRONLY or O_RDWR) in its checked directory, with extra open
// flags (O_EXCL for temp files).
int open_for_write(const std::string& path, const std::string& what, unsigned mode, int access, int extra) {
  std::string dir, base;
  split_path(path, &dir, &base);
  if (base.empty() || base == "." || base == "..") fail(path, what, "is not a file name");
  const int dfd = open_checked_dir(dir, what, path);
  const int fd = ::openat(dfd, base.c_str(), access | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | extra, mode);
  const int open_errno = errno;
  ::close(dfd);
  if (fd < 0 && open_errno == ELOOP) fail(path, what, "is a symlink; refusing to follow it");
  if (fd < 0 && open_errno == EEXIST) fail(path, what, "already exists");
  if (fd < 0) fail(path, what, std::string("cannot be created: ") + std::strerror(open_errno));
  struct stat st;
  std::string why = not_regular(fd, &st);
  if (why.empty() && st.st_uid != ::geteuid()) why = "is owned by another user (uid " + std::to_string(st.st_uid) + ")";
  if (why.empty() && ::ftruncate(fd, 0) != 0) why = std::string("cannot be truncated: ") + std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    fail(path, what, why);
  }
  clear_nonblock(fd);
  return fd;
}

}  // namespace

std::string file_kind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symlink";
  }
  return "not a regular file";
}

int try_open_regular_for_read(const std::string& path, size_t max_bytes, size_t* size, ReadRefusal* why) {
  *why = ReadRefusal();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why->kind = ReadRefusal::kCannotOpen;
    why->err = errno;
    why->reason = std::string("cannot be opened: ") + std::strerror(why->err);
    return -1;
  }
  struct stat st;
  why->reason = not_regular(fd, &st);
  if (!why->reason.empty()) {
    why->kind = ReadRefusal::kNotRegular;
  } else if (uint64_t(st.st_size) > uint64_t(max_bytes)) {
    why->kind = ReadRefusal::kTooLarge;
    why->reason =
        "is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) + " it can be";
  }
  if (why->kind != ReadRefusal::kNone) {
    ::close(fd);
    return -1;
  }
  clear_nonblock(fd);
  *size = size_t(st.st_size);
  return fd;
}

int open_regular_for_read(const std::string& path, size_t max_bytes, const std::string& what, size_t* size) {
  ReadRefusal why;
  const int fd = try_open_regular_for_read(path, max_bytes, size, &why);
  if (fd < 0) fail(path, what, why.reason);
  return fd;
}

std::string read_regular_file(const std::string& path, size_t max_bytes, const std::string& what) {
  size_t size = 0;
  const int fd = open_regular_for_read(path, max_bytes, what, &size);
  return read_open_file(fd, size, path, what);
}

std::string read_open_file(int fd, size_t size, const std::string& path, const std::string& what) {
  std::string bytes(size, '\0');
  size_t got = 0;
  std::string why;
  while (got < size) {
    const ssize_t n = ::pread(fd, &bytes[got], size - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::string("read failed: ") + std::strerror(errno);
    if (n == 0) why = "shrank while it was read";
    if (n <= 0) break;
    got += size_t(n);
  }
  char extra;
  if (why.empty() && ::pread(fd, &extra, 1, off_t(size)) > 0) why = "grew while it was read";
  ::close(fd);
  if (!why.empty()) fail(path, what, why);
  return bytes;
}

std::string unsafe_dir_reason(unsigned dir_uid, unsigned dir_mode, unsigned caller_uid) {
  const bool others_write = (dir_mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool trusted_owner = dir_uid == caller_uid || dir_uid == 0;
  if (others_write && !(dir_mode & S_ISVTX))
    return "is writable by other users (mode " + octal_mode(dir_mode) + ") and not sticky";
  if (!trusted_owner) return "is owned by another user (uid " + std::to_string(dir_uid) + ")";
  return "";
}

void check_write_dir(const std::string& dir, const std::string& what) { ::close(open_checked_dir(dir, what)); }

int create_output_file(const std::string& path, const std::string& what, unsigned mode, bool read_back) {
  return open_for_write(path, what, mode, read_back ? O_RDWR : O_WRONLY, 0);
}

std::FILE* create_output_stream(const std::string& path, const std::string& what, const char* fmode) {
  const int fd = create_output_file(path, what);
  std::FILE* f = ::fdopen(fd, fmode);
  if (!f) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    fail(path, what, "cannot be opened as a stream: " + why);
  }
  return f;
}

int create_temp_file(const std::string& path, const std::string& what, unsigned mode) {
  return open_for_write(path, what, mode, O_WRONLY, O_EXCL);
}
