// socket_io: TCP client I/O with deadlines (see socket_io.h).
#include "comm/socket_io.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "comm/big_endian.h"

namespace socket_io {

// Milliseconds left until deadline, rounded up, >= 0, capped to fit poll()'s int.
int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((left.count() + 999) / 1000, 1 << 30));
}

bool Backoff::wait(Clock::time_point deadline) {
  const int left = ms_left(deadline);
  if (left <= 0) return false;
  std::this_thread::sleep_for(std::min(next_, std::chrono::milliseconds(left)));
  next_ = std::min(next_ * 2, cap_);
  return true;
}

// Waits for events on fd; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms_left(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the following send/recv report the error
  }
}

IoResult send_all(int fd, const char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return {Io::kTimeout, 0};
    } else {
      const int err = errno;
      return {(err == EPIPE || err == ECONNRESET) ? Io::kClosed : Io::kError, err};
    }
  }
  return {Io::kOk, 0};
}

// Appends exactly n bytes to out (growing it as data arrives, never by n up front).
IoResult recv_exact(int fd, std::string* out, size_t n, Clock::time_point deadline) {
  constexpr size_t kChunk = size_t(1) << 20;
  while (n > 0) {
    const size_t old = out->size();
    const size_t want = std::min(n, kChunk);
    out->resize(old + want);
    ssize_t r = ::recv(fd, &(*out)[old], want, MSG_DONTWAIT);
    out->resize(old + (r > 0 ? static_cast<size_t>(r) : 0));
    if (r > 0) {
      n -= static_cast<size_t>(r);
    } else if (r == 0) {
      return {Io::kClosed, 0};
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) return {Io::kTimeout, 0};
    } else {
      const int err = errno;
      return {err == ECONNRESET ? Io::kClosed : Io::kError, err};
    }
  }
  return {Io::kOk, 0};
}

IoResult recv_frame(int fd, std::string* body, uint32_t max_len, Clock::time_point deadline) {
  std::string head;
  IoResult r = recv_exact(fd, &head, 4, deadline);
  if (r.status != Io::kOk) return r;
  const uint32_t len = load_u32be(head.data());
  if (len > max_len) return {Io::kError, EMSGSIZE};
  body->clear();
  return recv_exact(fd, body, len, deadline);
}

std::string io_text(IoResult r) {
  switch (r.status) {
    case Io::kOk:
      return "ok";
    case Io::kTimeout:
      return "timed out";
    case Io::kClosed:
      return "connection closed";
    case Io::kError:
      return r.err == EMSGSIZE ? "oversized frame" : std::strerror(r.err);
  }
  return "?";
}

// Opens a connected, non-blocking, TCP_NODELAY socket to one address; -1 and *why on failure.
int connect_once(const addrinfo* ai, Clock::time_point deadline, std::string* why) {
  int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  int err = 0;
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      if (!wait_for(fd, POLLOUT, deadline)) {
        *why = "connect timed out";
        ::close(fd);
        return -1;
      }
      socklen_t len = sizeof(err);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
  }
  if (err != 0) {
    *why = std::strerror(err);
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

AddrList resolve_host_port(const std::string& addr, const std::string& what) {
  const size_t colon = addr.rfind(':');
  std::string host = colon == std::string::npos ? "" : addr.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error(what + ": address is not host:port");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error(what + ": cannot resolve host: " + gai_strerror(rc));
  return AddrList(res, freeaddrinfo);
}

bool bind_source_address(int fd, const sockaddr_storage& own) {
  int one = 1;
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);  // a hint: without it, bind takes a port
  sockaddr_storage a = own;
  socklen_t len = sizeof(sockaddr_in6);
  if (a.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&a)->sin_port = 0;
    len = sizeof(sockaddr_in);
  } else {
    reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = 0;
  }
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&a), len) == 0;
}

}  // namespace socket_io
