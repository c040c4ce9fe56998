// run_id: reads 8 bytes of /dev/urandom for a new run id.
#include "src/run_id.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

std::string new_run_id() {
  unsigned char bytes[8];
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : ::read(fd, bytes, sizeof bytes);
  const int saved = errno;
  if (fd >= 0) ::close(fd);
  if (n != ssize_t(sizeof bytes))
    throw std::runtime_error(std::string("/dev/urandom: cannot read a run id: ") +
                             (n < 0 ? std::strerror(saved) : "short read"));
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return hex;
}
