// munge_store_server: see munge_store_server.h.
#include "comm/munge_store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "comm/store_munge.h"
#include "comm/store_protocol.h"
#include "comm/store_session.h"

namespace {

constexpr size_t kMaxConnections = 1024;
constexpr uint32_t kMaxHandshakeFrame = 4096;
constexpr uint32_t kMaxRequestFrame = 16u << 20;
constexpr int kMaxRefusalLines = 8;

void set_timeouts(int fd, std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

bool read_exact(int fd, std::string* out, size_t n) {
  char buf[64 * 1024];
  while (n > 0) {
    ssize_t r = ::recv(fd, buf, std::min(n, sizeof buf), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // closed, reset, timed out (SO_RCVTIMEO) or shut down by stop()
    out->append(buf, static_cast<size_t>(r));
    n -= static_cast<size_t>(r);
  }
  return true;
}

// One frame's body; false on EOF, error, timeout or a length over max_len.
bool read_frame(int fd, std::string* body, uint32_t max_len) {
  std::string head;
  if (!read_exact(fd, &head, 4)) return false;
  const uint32_t len = get_u32be(head.data());
  if (len > max_len) return false;
  body->clear();
  return read_exact(fd, body, len);
}

bool write_frame(int fd, const std::string& body) { return write_all(fd, encode_frame(body)); }

std::string peer_name(const sockaddr_in& sa) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
}

std::string port_range(const std::vector<int>& ports) {
  if (ports.empty()) return "(none)";
  return ports.size() == 1 ? std::to_string(ports[0])
                           : std::to_string(ports.front()) + ".." + std::to_string(ports.back());
}

}  // namespace

MungeStoreServer::MungeStoreServer(const Config& config) : config_(config) {
  const std::string where = "rendezvous store on " + config.bind_addr;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (::inet_pton(AF_INET, config.bind_addr.c_str(), &sa.sin_addr) != 1)
    throw std::runtime_error(where + ": '" + config.bind_addr + "' is not an IPv4 address");
  std::string last_error = "no ports to try";
  for (int port : config.ports) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(where + ": socket: " + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
      port_ = port;
      break;
    }
    last_error = "port " + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd);
  }
  if (listen_fd_ < 0)
    throw std::runtime_error(where + ": none of this job step's ports " + port_range(config.ports) +
                             " could be bound (last: " + last_error + ")");
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    throw std::runtime_error(where + ": pipe: " + std::strerror(err));
  }
  acceptor_ = std::thread(&MungeStoreServer::accept_loop, this);
}

MungeStoreServer::~MungeStoreServer() { stop(); }

void MungeStoreServer::stop() {
  if (stopping_.exchange(true)) return;
  const char byte = 'x';
  ssize_t ignored = ::write(wake_pipe_[1], &byte, 1);  // never drained: every poll sees it
  (void)ignored;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::unique_ptr<Worker>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes each worker's blocking recv
    workers.swap(workers_);
  }
  for (auto& w : workers) w->thread.join();
  for (int* fd : {&listen_fd_, &wake_pipe_[0], &wake_pipe_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void MungeStoreServer::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (stopping_ || (fds[0].revents & POLLIN)) return;
    if (!(fds[1].revents & POLLIN)) continue;
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || open_fds_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reap_finished_workers();
    open_fds_.push_back(fd);
    workers_.push_back(std::make_unique<Worker>());
    Worker* w = workers_.back().get();
    w->thread = std::thread(&MungeStoreServer::serve, this, fd, "client " + peer_name(sa), w);
  }
}

void MungeStoreServer::reap_finished_workers() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!(*it)->done) {
      ++it;
      continue;
    }
    (*it)->thread.join();
    it = workers_.erase(it);
  }
}

void MungeStoreServer::forget(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  ::close(fd);
}

void MungeStoreServer::serve(int fd, const std::string& peer, Worker* self) {
  set_timeouts(fd, config_.auth_timeout);
  if (admit(fd, peer)) {
    set_timeouts(fd, std::chrono::milliseconds(0));  // an admitted rank may be quiet for long
    std::string request;
    while (!stopping_ && read_frame(fd, &request, kMaxRequestFrame)) {
      bool malformed = false;
      const std::string reply = handle(request, &malformed);
      if (malformed || !write_frame(fd, reply)) break;
    }
  }
  forget(fd);
  self->done = true;
}

bool MungeStoreServer::admit(int fd, const std::string& peer) {
  const std::string nonce = to_hex(random_bytes(32));
  if (!write_frame(fd, std::string(kStoreMungeGreeting) + nonce)) return false;
  std::string hello;
  if (!read_frame(fd, &hello, kMaxHandshakeFrame) || hello.size() <= 64) return false;
  const std::string client_nonce = hello.substr(0, 64);
  std::string why;
  try {
    const DecodedCredential cred = munge_decode_credential(hello.substr(64), config_.munge_socket);
    why =
        check_munge_credential(cred, ::getuid(), munge_client_payload(config_.step_payload, nonce, client_nonce), peer);
    if (why.empty()) {
      const std::string mine =
          munge_encode_payload(munge_server_payload(config_.step_payload, client_nonce), config_.munge_socket);
      return write_frame(fd, "OK " + mine);
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (refused_++ < kMaxRefusalLines)
    std::fprintf(stderr, "train: rank 0's rendezvous store refused %s: %s\n", peer.c_str(), why.c_str());
  write_frame(fd, "DENIED " + why);
  return false;
}

std::string MungeStoreServer::handle(const std::string& body, bool* malformed) {
  StoreRequest req;
  if (!parse_store_request(body.data(), body.size(), &req)) {
    *malformed = true;
    return "";
  }
  std::lock_guard<std::mutex> lock(mu_);
  return store_reply(&table_, req, kMaxFrameBytes);
}
