// store_server: see store_server.h. One thread runs poll() over the wake pipe, the listening
// socket and every client; per connection it moves bytes between the socket and a StoreSession,
// which owns the protocol. The loop never blocks on a client: reads and writes are non-blocking
// and bounded per round (kMaxReadPerRound), so one busy client cannot starve the others.
#include "comm/store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxReadPerRound = 256 * 1024;
constexpr int kMaxAcceptsPerRound = 64;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

struct StoreServer::Connection {
  int fd = -1;
  Clock::time_point auth_deadline;
  StoreSession session;
  bool failed = false;  // socket error: close without counting as a protocol drop

  Connection(int fd_in, Clock::time_point deadline, StoreTable* table, const std::string& secret,
             const std::string& nonce, const StoreLimits& limits)
      : fd(fd_in), auth_deadline(deadline), session(table, secret, nonce, limits) {}
};

StoreServer::StoreServer(const std::string& bind_addr, int port, const std::string& secret, const StoreLimits& limits)
    : bind_addr_(bind_addr), secret_(secret), limits_(limits), table_(limits.max_stored_bytes) {
  const std::string where = "rendezvous store server on " + bind_addr + ":" + std::to_string(port);
  if (bind_addr.empty()) throw std::runtime_error("rendezvous store server: empty bind address (give an IPv4 address)");
  if (secret.empty()) throw std::runtime_error(where + ": empty job secret");
  if (port < 0 || port > 65535) throw std::runtime_error(where + ": port out of range");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, bind_addr.c_str(), &sa.sin_addr) != 1)
    throw std::runtime_error(where + ": '" + bind_addr + "' is not an IPv4 address");

  try {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error(where + ": socket: " + errno_text(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
      throw std::runtime_error(where + ": bind: " + errno_text(errno));
    if (::listen(listen_fd_, SOMAXCONN) != 0) throw std::runtime_error(where + ": listen: " + errno_text(errno));
    socklen_t len = sizeof(sa);
    if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
      throw std::runtime_error(where + ": getsockname: " + errno_text(errno));
    port_ = ntohs(sa.sin_port);
    if (::pipe2(wake_pipe_, O_NONBLOCK | O_CLOEXEC) != 0)
      throw std::runtime_error(where + ": pipe: " + errno_text(errno));
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  } catch (...) {
    close_all_fds();
    throw;
  }
}

StoreServer::~StoreServer() {
  stop();
  close_all_fds();
}

void StoreServer::start() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (stopped_)
    throw std::runtime_error("rendezvous store server on " + bind_addr_ + ":" + std::to_string(port_) +
                             " was stopped and cannot be restarted");
  if (thread_.joinable()) return;
  running_ = true;
  thread_ = std::thread(&StoreServer::serve, this);
}

void StoreServer::stop() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  running_ = false;
  if (thread_.joinable()) {
    const char byte = 'x';
    // The pipe is non-blocking; if it is full the thread is already due to wake up.
    ssize_t ignored = ::write(wake_pipe_[1], &byte, 1);
    (void)ignored;
    thread_.join();
  }
  close_all_fds();
}

void StoreServer::close_all_fds() {
  for (auto& c : conns_)
    if (c->fd >= 0) ::close(c->fd);
  conns_.clear();
  for (int* fd : {&listen_fd_, &wake_pipe_[0], &wake_pipe_[1], &spare_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void StoreServer::serve() {
  while (running_) {
    try {
      serve_once();
    } catch (const std::exception& e) {
      // Per-connection failures are handled inside; this is poll() itself failing or an
      // allocation failure. Keep serving: ranks waiting on the store have no other way out.
      std::fprintf(stderr, "rendezvous store server: %s\n", e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// The nearest handshake deadline, in ms from now (at most 1 s, so a missed wakeup costs little).
int StoreServer::poll_timeout_ms() const {
  const Clock::time_point now = Clock::now();
  int64_t timeout_ms = 1000;
  for (const auto& c : conns_) {
    if (c->session.authenticated()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c->auth_deadline - now);
    timeout_ms = std::min<int64_t>(timeout_ms, std::max<int64_t>(0, left.count() + 1));
  }
  return static_cast<int>(timeout_ms);
}

// The wake pipe, the listener, then one entry per connection (in conns_ order).
std::vector<pollfd> StoreServer::poll_set() const {
  std::vector<pollfd> fds;
  fds.reserve(2 + conns_.size());
  fds.push_back({wake_pipe_[0], POLLIN, 0});
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& c : conns_) {
    short events = 0;
    if (c->session.wants_input()) events |= POLLIN;
    if (c->session.output_size() > 0) events |= POLLOUT;
    fds.push_back({c->fd, events, 0});
  }
  return fds;
}

void StoreServer::serve_once() {
  std::vector<pollfd> fds = poll_set();
  int n = ::poll(fds.data(), fds.size(), poll_timeout_ms());
  if (n < 0) {
    if (errno == EINTR) return;
    throw std::runtime_error(std::string("poll: ") + errno_text(errno));
  }
  if (fds[0].revents & POLLIN) {
    char buf[64];
    while (::read(wake_pipe_[0], buf, sizeof(buf)) > 0) {}
  }
  if (!running_) return;
  // Existing connections first (their indices match fds[2..]), then new ones.
  const size_t polled = conns_.size();
  for (size_t i = 0; i < polled; ++i)
    if (fds[2 + i].revents != 0) serve_ready(conns_[i].get(), fds[2 + i].revents);
  close_finished();
  if (fds[1].revents & POLLIN) accept_new();
}

// One connection poll() reported on: read what it sent, write what it is owed.
void StoreServer::serve_ready(Connection* c, short re) {
  try {
    if (re & POLLNVAL) {
      c->failed = true;
      return;
    }
    if (re & (POLLIN | POLLHUP | POLLERR)) {
      if (c->session.wants_input()) {
        read_from(c);
      } else if (re & (POLLHUP | POLLERR)) {
        c->failed = true;  // peer gone while we were not reading: nothing left to deliver to
      }
    }
    if (!c->failed && c->session.output_size() > 0) write_to(c);
  } catch (const std::exception&) {
    c->failed = true;  // e.g. bad_alloc for one huge frame: drop that client only
  }
}

// Closes finished, failed and timed-out connections (back to front keeps indices valid).
void StoreServer::close_finished() {
  const Clock::time_point after = Clock::now();
  for (size_t i = conns_.size(); i-- > 0;) {
    Connection* c = conns_[i].get();
    if (c->failed || c->session.done()) {
      switch (c->session.close_reason()) {
        case StoreSession::CloseReason::kDenied:
          denied_++;
          break;
        case StoreSession::CloseReason::kMalformed:
          dropped_++;
          break;
        default:
          break;
      }
      close_connection(i);
    } else if (!c->session.authenticated() && after >= c->auth_deadline) {
      dropped_++;
      close_connection(i);
    }
  }
}

void StoreServer::read_from(Connection* c) {
  char buf[kReadChunk];
  size_t total = 0;
  while (total < kMaxReadPerRound && c->session.wants_input()) {
    ssize_t r = ::recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      total += static_cast<size_t>(r);
      c->session.on_input(buf, static_cast<size_t>(r));
      // Reply as we go so pipelined requests do not pile up behind backpressure.
      if (c->session.output_size() > 0) write_to(c);
      if (c->failed) return;
    } else if (r == 0) {
      c->session.on_input_closed();
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      c->failed = true;  // ECONNRESET and friends
      return;
    }
  }
}

void StoreServer::write_to(Connection* c) {
  while (c->session.output_size() > 0) {
    ssize_t w = ::send(c->fd, c->session.output_data(), c->session.output_size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      c->session.on_output_written(static_cast<size_t>(w));
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // POLLOUT next round
    } else {
      c->failed = true;  // EPIPE, ECONNRESET
      return;
    }
  }
}

void StoreServer::accept_new() {
  for (int i = 0; i < kMaxAcceptsPerRound; ++i) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      admit(fd);
      continue;
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if ((err == EMFILE || err == ENFILE) && spare_fd_ >= 0) {
      // Out of descriptors: accept with the spare slot and close at once, so the pending
      // connection does not keep the listening socket readable (a busy loop) forever.
      ::close(spare_fd_);
      spare_fd_ = -1;
      int extra = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (extra >= 0) {
        ::close(extra);
        dropped_++;
      }
      spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      continue;
    }
    return;  // EAGAIN, or an error we cannot act on; poll() will tell us again
  }
}

void StoreServer::admit(int fd) {
  if (conns_.size() >= limits_.max_connections) {
    // Full: make room by evicting the oldest connection that has not authenticated (they are
    // in accept order); if every slot is an authenticated rank, refuse the newcomer instead.
    auto oldest = std::find_if(conns_.begin(), conns_.end(), [](const auto& c) { return !c->session.authenticated(); });
    dropped_++;
    if (oldest == conns_.end()) {
      ::close(fd);
      return;
    }
    close_connection(static_cast<size_t>(oldest - conns_.begin()));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  try {
    auto c = std::make_unique<Connection>(fd, Clock::now() + limits_.auth_timeout, &table_, secret_,
                                          random_bytes(kStoreNonceBytes), limits_);
    Connection* raw = c.get();
    conns_.push_back(std::move(c));
    write_to(raw);  // the greeting; a new socket's send buffer takes it at once
  } catch (const std::exception&) {
    ::close(fd);
    dropped_++;
  }
}

void StoreServer::close_connection(size_t index) {
  ::close(conns_[index]->fd);
  conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(index));
}
