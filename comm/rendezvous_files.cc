// rendezvous_files: one file per rendezvous key on --rendezvous-dir (see rendezvous_files.h).
#include "comm/rendezvous_files.h"
#include "src/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace {

constexpr size_t kMaxValueBytes = 64 << 20;  // a rank's published addresses: kilobytes, not gigabytes

bool is_plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

[[noreturn]] void fail_on(const std::string& file, const char* what) {
  throw std::runtime_error("cannot " + std::string(what) + " " + file + ": " + std::strerror(errno));
}

}  // namespace

std::string rendezvous_file_name(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string name;
  for (unsigned char c : key) {
    if (is_plain(c)) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += hex[c >> 4];
      name += hex[c & 15];
    }
  }
  return name;
}

std::string RendezvousFiles::path_of(const std::string& key) const { return dir_ + "/" + rendezvous_file_name(key); }

void RendezvousFiles::set(const std::string& key, const std::vector<char>& value) {
  const std::string file = path_of(key);
  const std::string tmp = file + ".tmp" + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) fail_on(tmp, "create");
  size_t done = 0;
  while (done < value.size()) {
    const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      fail_on(tmp, "write");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail_on(tmp, "write");
  if (::rename(tmp.c_str(), file.c_str()) != 0) fail_on(file, "create");
  own_.push_back(file);
}

RendezvousFiles::RendezvousFiles(std::string dir) : dir_(std::move(dir)) {
  check_write_dir(dir_, "--rendezvous-dir");  // not a directory another user can write in
}

RendezvousFiles::~RendezvousFiles() { remove_own_files(); }  // a failed rank leaves nothing either

// A key's file: a regular file of at most kMaxValueBytes written by this job's user (a file another
// user planted under a key's name is named, never read as a peer's address).
bool RendezvousFiles::get(const std::string& key, std::vector<char>* value) const {
  const std::string file = path_of(key);
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0) return false;
  check_owner(file, st);
  const std::string bytes = read_regular_file(file, kMaxValueBytes, "rendezvous file");
  value->assign(bytes.begin(), bytes.end());
  return true;
}

void RendezvousFiles::check_owner(const std::string& file, const struct stat& st) const {
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("--rendezvous-dir " + dir_ + ": " + file + " belongs to uid " + std::to_string(st.st_uid) +
                             ", not to this job's user (uid " + std::to_string(::geteuid()) + "); refusing it");
}

bool RendezvousFiles::has(const std::string& key) const { return ::access(path_of(key).c_str(), F_OK) == 0; }

bool RendezvousFiles::claim(const std::string& name) {
  const std::string file = dir_ + "/claim-" + rendezvous_file_name(name);
  const int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    own_.push_back(file);
    return true;
  }
  if (errno != EEXIST) fail_on(file, "create");
  struct stat st;  // someone holds the claim: it must be one of this job's ranks
  if (::lstat(file.c_str(), &st) == 0) check_owner(file, st);
  return false;
}

void RendezvousFiles::remove_own_files() {
  for (const std::string& f : own_) ::unlink(f.c_str());
  own_.clear();
}
