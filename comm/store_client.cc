// store_client: see store_client.h. The socket stays non-blocking and every wait goes through
// poll() with a deadline, so no call can hang longer than its timeout (connect, handshake and
// each request alike).
#include "comm/store_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "comm/store_protocol.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kMinIoTimeout{5000};

enum class Io { kOk, kTimeout, kClosed, kError };

struct IoResult {
  Io status;
  int err;  // errno for kError
};

// Milliseconds left until deadline, rounded up, >= 0, capped to fit poll()'s int.
int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((left.count() + 999) / 1000, 1 << 30));
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

// Reads one frame's body; kError with err = EMSGSIZE if its length prefix exceeds max_len.
IoResult recv_frame(int fd, std::string* body, uint32_t max_len, Clock::time_point deadline) {
  std::string head;
  IoResult r = recv_exact(fd, &head, 4, deadline);
  if (r.status != Io::kOk) return r;
  const uint32_t len = get_u32be(head.data());
  if (len > max_len) return {Io::kError, EMSGSIZE};
  body->clear();
  return recv_exact(fd, body, len, deadline);
}

std::string io_text(IoResult r) {
  switch (r.status) {
    case Io::kOk: return "ok";
    case Io::kTimeout: return "timed out";
    case Io::kClosed: return "connection closed";
    case Io::kError: return r.err == EMSGSIZE ? "oversized frame" : std::strerror(r.err);
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

std::string quoted(const std::string& key) { return "'" + printable_key(key) + "'"; }

}  // namespace

StoreClient::StoreClient(const std::string& addr, const std::string& secret,
                         std::chrono::milliseconds timeout)
    : addr_(addr), io_timeout_(std::max(timeout, kMinIoTimeout)) {
  const std::string prefix = "rendezvous store " + addr;
  const size_t colon = addr.rfind(':');
  std::string host = colon == std::string::npos ? "" : addr.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error(prefix + ": address is not host:port");
  if (secret.empty()) throw std::runtime_error(prefix + ": no job secret given");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error(prefix + ": cannot resolve host: " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> res_guard(res, freeaddrinfo);

  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds backoff{10};
  std::string why = "not tried";
  for (;;) {
    for (const addrinfo* ai = res; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
      fd_ = connect_once(ai, deadline, &why);
      if (fd_ >= 0 && handshake(secret, deadline, &why) != Handshake::kOk) close_socket();
    }
    if (fd_ >= 0) return;
    const int left = ms_left(deadline);
    if (left <= 0)
      throw std::runtime_error(prefix + " not reachable within " + std::to_string(timeout.count()) +
                               " ms: " + why);
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        backoff, std::chrono::milliseconds(left)));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(250));
  }
}

StoreClient::~StoreClient() { close_socket(); }

void StoreClient::close_socket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StoreClient::fail(const std::string& what) {
  close_socket();
  throw std::runtime_error("rendezvous store " + addr_ + " " + what);
}

StoreClient::Handshake StoreClient::handshake(const std::string& secret,
                                              Clock::time_point deadline, std::string* why) {
  const std::string greeting_prefix = kStoreGreeting;
  std::string greeting;
  IoResult r = recv_frame(fd_, &greeting, 1024, deadline);
  if (r.status == Io::kTimeout) {
    *why = "connected, but no greeting arrived";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk && !(r.status == Io::kError && r.err == EMSGSIZE)) {
    // Closed or reset before the greeting: the server may be full or restarting; retry.
    *why = "connection closed before the greeting (" + io_text(r) + ")";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk || greeting.size() != greeting_prefix.size() + kStoreNonceBytes ||
      greeting.compare(0, greeting_prefix.size(), greeting_prefix) != 0)
    fail("is not a baresgd rendezvous store (unexpected greeting)");
  const std::string mac = hmac_sha256(secret, greeting.substr(greeting_prefix.size()));
  r = send_all(fd_, encode_frame(mac).data(), 4 + mac.size(), deadline);
  std::string answer;
  if (r.status == Io::kOk) r = recv_frame(fd_, &answer, 64, deadline);
  if (r.status == Io::kTimeout) {
    *why = "no answer to the authentication";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk) {
    *why = "connection closed during the handshake (" + io_text(r) + ")";
    return Handshake::kRetry;
  }
  if (answer == "OK") return Handshake::kOk;
  if (answer == "DENIED") fail("refused the job secret");
  fail("answered the handshake with an unexpected reply");
}

std::string StoreClient::request(const std::string& body, const char* what,
                                 const std::string& key) {
  const std::string op = std::string(what) + " of key " + quoted(key);
  if (fd_ < 0)
    throw std::runtime_error("rendezvous store " + addr_ + ": cannot " + op +
                             ": the connection was closed after an earlier error");
  if (body.size() > kMaxFrameBytes)
    throw std::runtime_error("rendezvous store " + addr_ + ": " + op + " is " +
                             std::to_string(body.size()) + " bytes, over the frame limit of " +
                             std::to_string(kMaxFrameBytes));
  const Clock::time_point deadline = Clock::now() + io_timeout_;
  std::string head;
  put_u32be(&head, static_cast<uint32_t>(body.size()));
  IoResult r;
  if (body.size() <= 64 * 1024) {
    head += body;  // one segment for the common small request
    r = send_all(fd_, head.data(), head.size(), deadline);
  } else {
    r = send_all(fd_, head.data(), head.size(), deadline);
    if (r.status == Io::kOk) r = send_all(fd_, body.data(), body.size(), deadline);
  }
  std::string reply;
  if (r.status == Io::kOk) r = recv_frame(fd_, &reply, kMaxFrameBytes, deadline);
  switch (r.status) {
    case Io::kOk:
      break;
    case Io::kTimeout:
      fail("did not answer " + op + " within " + std::to_string(io_timeout_.count()) + " ms");
    case Io::kClosed:
      fail("closed the connection during " + op);
    case Io::kError:
      fail("connection failed during " + op + ": " + io_text(r));
  }
  const size_t plen = std::strlen(kStoreErrorPrefix);
  if (reply.size() > 8 && reply.compare(0, plen, kStoreErrorPrefix) == 0)
    throw std::runtime_error("rendezvous store " + addr_ + ": " + op +
                             " failed: " + reply.substr(plen));
  return reply;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  const std::string reply = request(encode_set_request(key, value), "set", key);
  if (reply != "OK") fail("sent an unexpected reply to set of key " + quoted(key));
}

bool StoreClient::try_get(const std::string& key, std::string* value) {
  std::string reply = request(encode_get_request(key), "get", key);
  if (reply == "N") return false;
  if (reply.empty() || reply[0] != 'F') fail("sent an unexpected reply to get of key " + quoted(key));
  if (value != nullptr) value->assign(reply, 1, std::string::npos);
  return true;
}

std::string StoreClient::wait_get(const std::string& key, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds backoff{1};
  std::string value;
  for (;;) {
    if (try_get(key, &value)) return value;
    const int left = ms_left(deadline);
    if (left <= 0)
      throw std::runtime_error("rendezvous store " + addr_ + ": key " + quoted(key) +
                               " not set within " + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        backoff, std::chrono::milliseconds(left)));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(50));
  }
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  const std::string reply = request(encode_add_request(key, delta), "add", key);
  if (reply.size() != 8) fail("sent an unexpected reply to add of key " + quoted(key));
  return get_i64be(reply.data());
}
