// gloo_handover: the process's connect() and accept(), armed for one Gloo pair at a time (see
// gloo_handover.h). Unarmed calls are the plain system calls.
#include "comm/gloo_handover.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

#include "comm/socket_io.h"

namespace {

using Clock = std::chrono::steady_clock;

int real_connect(int fd, const sockaddr* addr, socklen_t len) { return int(syscall(SYS_connect, fd, addr, len)); }

// ---- Active side: one armed socket per thread. ----

thread_local int armed_fd = -1;

// ---- Passive side: the hand-overs under way (one per thread that connects a mesh), shared with
// Gloo's device threads under a mutex. ----

struct Expected {
  bool known = false;   // expect_doorbell was called
  bool handed = false;  // accept() returned the socket
  sockaddr_storage listener{}, doorbell{};
  int fd = -1;
  Clock::time_point deadline;
  std::function<void(const std::string&)> stranger;
};

std::mutex mu;
std::condition_variable changed;
std::map<unsigned long, Expected> expected;  // by hand-over id
unsigned long next_id = 1;
std::atomic<int> under_way{0};

bool is_inet(const sockaddr_storage& ss) { return ss.ss_family == AF_INET || ss.ss_family == AF_INET6; }

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto *x = reinterpret_cast<const sockaddr_in*>(&a), *y = reinterpret_cast<const sockaddr_in*>(&b);
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  const auto *x = reinterpret_cast<const sockaddr_in6*>(&a), *y = reinterpret_cast<const sockaddr_in6*>(&b);
  return x->sin6_port == y->sin6_port && std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
}

std::string text(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(a->sin_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
  inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
  return "[" + std::string(ip) + "]:" + std::to_string(ntohs(a->sin6_port));
}

// Closes an accepted connection with a reset (SO_LINGER 0) instead of a FIN, so that it leaves no
// TIME_WAIT socket holding the listener's port for a minute: a rank that accepts 2(W-1) pairs
// would otherwise hold that many ports of its address after the connect (comm/loopback_spread.h).
void close_with_reset(int fd) {
  const linger no_linger = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof no_linger);
  ::close(fd);
}

// Gloo's accept() on the expected listener: take connections until the doorbell's, closing every
// other one as a stranger; then the authenticated socket stands in for the doorbell.
int accept_doorbell(int listen_fd, sockaddr* addr, socklen_t* len, const Expected& e) {
  for (;;) {
    pollfd p = {listen_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, socket_io::ms_left(e.deadline));
    if (ready == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (ready < 0 && errno == EINTR) continue;
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const int c = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      return -1;
    }
    close_with_reset(c);
    if (same_address(from, e.doorbell)) break;
    if (e.stranger) e.stranger(text(from));
  }
  if (addr && len) {  // the real peer's address, as accept() would have given it
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    getpeername(e.fd, reinterpret_cast<sockaddr*>(&peer), &peer_len);
    std::memcpy(addr, &peer, std::min<size_t>(*len, peer_len));
    *len = peer_len;
  }
  return e.fd;
}

}  // namespace

namespace gloo_handover {

ArmedConnect::ArmedConnect(int fd) { armed_fd = fd; }
ArmedConnect::~ArmedConnect() {
  if (armed_fd >= 0) ::close(armed_fd);
  armed_fd = -1;
}
bool ArmedConnect::taken() const { return armed_fd < 0; }

Handover begin_passive(std::function<void(const std::string& from)> stranger) {
  std::lock_guard<std::mutex> lock(mu);
  const Handover h = next_id++;
  expected[h].stranger = std::move(stranger);
  ++under_way;
  return h;
}

void expect_doorbell(Handover h, const sockaddr_storage& listener, const sockaddr_storage& doorbell, int fd,
                     Clock::time_point deadline) {
  std::lock_guard<std::mutex> lock(mu);
  Expected& e = expected.at(h);
  e.known = true;
  e.listener = listener;
  e.doorbell = doorbell;
  e.fd = fd;
  e.deadline = deadline;
  changed.notify_all();
}

bool end_passive(Handover h) {
  std::lock_guard<std::mutex> lock(mu);
  const Expected e = expected.at(h);
  if (!e.handed && e.fd >= 0) ::close(e.fd);
  expected.erase(h);
  --under_way;
  changed.notify_all();
  return e.handed;
}

}  // namespace gloo_handover

// ---- The interposed calls. ----

extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  if (armed_fd < 0 || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return real_connect(fd, addr, len);
  const int mine = armed_fd;
  armed_fd = -1;
  if (::dup2(mine, fd) < 0) {
    const int err = errno;
    ::close(mine);
    errno = err;
    return -1;
  }
  ::close(mine);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return 0;
}

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  if (under_way.load() == 0) return ::accept4(fd, addr, len, 0);
  sockaddr_storage self{};
  socklen_t self_len = sizeof self;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0 || !is_inet(self))
    return ::accept4(fd, addr, len, 0);
  Expected e;
  gloo_handover::Handover h = 0;
  {
    std::unique_lock<std::mutex> lock(mu);
    auto mine = [&] {
      for (const auto& [id, x] : expected)
        if (x.known && !x.handed && same_address(self, x.listener)) return id;
      return gloo_handover::Handover(0);
    };
    auto all_known = [&] {
      for (const auto& [id, x] : expected)
        if (!x.known) return false;
      return true;
    };
    changed.wait(lock, [&] { return mine() != 0 || all_known(); });
    h = mine();
    if (h == 0) {
      lock.unlock();
      return ::accept4(fd, addr, len, 0);
    }
    e = expected[h];
  }
  const int got = accept_doorbell(fd, addr, len, e);
  if (got >= 0) {
    std::lock_guard<std::mutex> lock(mu);
    expected[h].handed = true;
  }
  return got;
}
