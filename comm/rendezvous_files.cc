// rendezvous_files: one file per rendezvous key on --rendezvous-dir (see rendezvous_files.h).
#include "comm/rendezvous_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace {

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
  const int fd = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
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

bool RendezvousFiles::get(const std::string& key, std::vector<char>* value) const {
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return false;
  value->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

bool RendezvousFiles::has(const std::string& key) const { return ::access(path_of(key).c_str(), F_OK) == 0; }

bool RendezvousFiles::claim(const std::string& name) {
  const std::string file = dir_ + "/claim-" + rendezvous_file_name(name);
  const int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    own_.push_back(file);
    return true;
  }
  if (errno == EEXIST) return false;
  fail_on(file, "create");
}

void RendezvousFiles::remove_own_files() {
  for (const std::string& f : own_) ::unlink(f.c_str());
  own_.clear();
}
