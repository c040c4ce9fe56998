// pair_gate: the authenticated mesh of phase A (protocol and costs: see pair_gate.h).
#include "comm/pair_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <stdexcept>

#include "comm/socket_io.h"
#include "comm/store_protocol.h"

namespace {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

std::string be32(int v) {
  std::string s;
  put_u32be(&s, static_cast<uint32_t>(v));
  return s;
}

// "1.2.3.4:5" or "[::1]:5" of a socket address.
std::string sockaddr_text(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    port = ntohs(a->sin_port);
    return std::string(ip) + ":" + std::to_string(port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    port = ntohs(a->sin6_port);
    return "[" + std::string(ip) + "]:" + std::to_string(port);
  }
  return "?";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string list;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) list += ", ...";
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

}  // namespace

// ---- The handshake's messages (pure functions, tested in tests/test_pair_gate.cc). ----

std::string gate_client_proof(const std::string& secret, const std::string& gate_nonce, int mesh, int from, int to) {
  return hmac_sha256(secret, "baresgd-gate-client" + gate_nonce + be32(mesh) + be32(from) + be32(to));
}

std::string gate_server_proof(const std::string& secret, const std::string& client_nonce, int mesh, int from, int to) {
  return hmac_sha256(secret, "baresgd-gate-server" + client_nonce + be32(mesh) + be32(from) + be32(to));
}

std::string gate_client_hello(const std::string& secret, const std::string& gate_nonce, const std::string& client_nonce,
                              int mesh, int from, int to) {
  return be32(from) + be32(mesh) + client_nonce + gate_client_proof(secret, gate_nonce, mesh, from, to);
}

GateVerdict check_gate_hello(const std::string& secret, const std::string& gate_nonce, const std::string& hello,
                             int meshes, int to, int size) {
  GateVerdict v;
  if (hello.size() != kGateHelloBytes) {
    v.why = "a hello of " + std::to_string(hello.size()) + " bytes";
    return v;
  }
  const uint32_t from = get_u32be(hello.data()), mesh = get_u32be(hello.data() + 4);
  const std::string client_nonce = hello.substr(8, kGateNonceBytes), mac = hello.substr(8 + kGateNonceBytes);
  if (from <= static_cast<uint32_t>(to) || from >= static_cast<uint32_t>(size) ||
      mesh >= static_cast<uint32_t>(meshes)) {
    v.why = "a pair that cannot connect here";
    return v;
  }
  if (!constant_time_equal(mac, gate_client_proof(secret, gate_nonce, int(mesh), int(from), to))) {
    v.why = "a wrong proof";
    return v;
  }
  v.ok = true;
  v.mesh = int(mesh);
  v.from = int(from);
  return v;
}

// ---- One connection of the loop: a client to a lower rank's gate, or one accepted at ours. ----

struct PairGate::Conn {
  enum class Stage { kRetryWait, kConnecting, kExchange, kDone, kClosed };
  bool client = false;
  Stage stage = Stage::kClosed;
  int fd = -1;
  int mesh = -1, peer = -1;  // client: what it connects; gate: known once the hello is checked
  std::string in, out;       // in: bytes read so far of `want`; out: unsent bytes
  size_t want = 0;
  std::string nonce;       // client: Nc; gate: Ns
  Clock::time_point wake;  // client: when to retry; gate: when a silent connection is dropped
  ms backoff{10};
  std::string from;  // gate: the connecting address, for the stranger line
};

PairGate::PairGate(const std::string& ip, int rank, int size, int meshes) : rank_(rank), size_(size), meshes_(meshes) {
  sockets_.assign(meshes_, std::vector<int>(size_, -1));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(ip.c_str(), "0", &hints, &res) != 0 || !res)
    throw std::runtime_error("cannot open its Gloo gate: '" + ip + "' is not an IP address");
  listen_fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const bool ok =
      listen_fd_ >= 0 && ::bind(listen_fd_, res->ai_addr, res->ai_addrlen) == 0 && ::listen(listen_fd_, SOMAXCONN) == 0;
  const int err = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("cannot open its Gloo gate on " + ip + ": " + std::strerror(err));
  }
  socklen_t len = sizeof own_;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&own_), &len);
  address_ = sockaddr_text(own_);
}

PairGate::~PairGate() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (auto& mesh : sockets_)
    for (int fd : mesh)
      if (fd >= 0) ::close(fd);
}

int PairGate::take(int mesh, int peer) {
  const int fd = sockets_.at(mesh).at(peer);
  sockets_[mesh][peer] = -1;
  return fd;
}

void PairGate::count_stranger(const std::string& from) {
  ++dropped_;
  if (dropped_from_.size() < 4) dropped_from_.push_back(from);
}

std::string PairGate::dropped_summary() const {
  if (dropped_ == 0) return "";
  std::string from;
  for (const auto& a : dropped_from_) from += (from.empty() ? "" : ", ") + a;
  if (dropped_ > int(dropped_from_.size())) from += ", ...";
  return "dropped " + std::to_string(dropped_) + " connection" + (dropped_ == 1 ? "" : "s") +
         " to its Gloo gate that did not prove the job secret (from " + from + ")";
}

// ---- The loop. ----

void PairGate::connect_all(const std::string& secret, const std::vector<std::string>& gates, Clock::time_point deadline,
                           const std::string& budget) {
  secret_ = secret;
  std::vector<sockaddr_storage> peer_addr(size_);
  std::vector<socklen_t> peer_len(size_, 0);
  std::list<Conn> conns;  // a list: the poll round holds pointers to its elements while it adds more
  struct CloseOnExit {    // what is still open when the deadline throws
    std::list<Conn>& conns;
    ~CloseOnExit() {
      for (auto& c : conns)
        if (c.fd >= 0) ::close(c.fd);
    }
  } close_on_exit{conns};
  for (int p = 0; p < rank_; ++p) {
    auto ai = socket_io::resolve_host_port(gates.at(p), "rank " + std::to_string(p) + "'s Gloo gate");
    std::memcpy(&peer_addr[p], ai->ai_addr, ai->ai_addrlen);
    peer_len[p] = ai->ai_addrlen;
    for (int m = 0; m < meshes_; ++m) {
      Conn c;
      c.client = true;
      c.mesh = m;
      c.peer = p;
      c.stage = Conn::Stage::kRetryWait;
      c.wake = Clock::now();
      conns.push_back(c);
    }
  }
  const size_t expected = size_t(meshes_) * size_t(size_ - 1);
  size_t done = 0;
  const size_t max_pending_at_gate = 4 * size_t(size_) + 64;  // a flood waits for its deadline, not our memory

  auto connect_client = [&](Conn* c) {
    c->fd = ::socket(peer_addr[c->peer].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) throw std::runtime_error(std::string("gloo gate: socket: ") + std::strerror(errno));
    if (own_.ss_family == peer_addr[c->peer].ss_family && !socket_io::bind_source_address(c->fd, own_))
      throw std::runtime_error("gloo gate: cannot bind a connection to rank " + std::to_string(c->peer) + " to " +
                               sockaddr_text(own_) + ": " + std::strerror(errno));
    const int r = ::connect(c->fd, reinterpret_cast<sockaddr*>(&peer_addr[c->peer]), peer_len[c->peer]);
    c->stage = (r == 0 || errno == EINPROGRESS) ? Conn::Stage::kConnecting : Conn::Stage::kClosed;
    c->in.clear();
    c->out.clear();
  };
  auto retry_later = [&](Conn* c, Clock::time_point now) {
    if (c->fd >= 0) ::close(c->fd);
    c->fd = -1;
    c->stage = Conn::Stage::kRetryWait;
    c->wake = now + c->backoff;
    c->backoff = std::min(c->backoff * 2, ms(500));
  };
  auto finish = [&](Conn* c) {
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockets_[c->mesh][c->peer] = c->fd;
    c->fd = -1;
    c->stage = Conn::Stage::kDone;
    ++done;
  };
  auto drop_stranger = [&](Conn* c) {
    ::close(c->fd);
    c->fd = -1;
    c->stage = Conn::Stage::kClosed;
    count_stranger(c->from);
  };

  while (done < expected) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) throw std::runtime_error(missing_error(budget));

    // What to wait for, and until when.
    Clock::time_point until = deadline;
    size_t pending_at_gate = 0;
    std::vector<pollfd> fds;
    std::vector<Conn*> of;
    fds.push_back({listen_fd_, POLLIN, 0});  // the gate stays open until this rank is done
    of.push_back(nullptr);
    for (auto& c : conns) {
      if (c.stage == Conn::Stage::kRetryWait || (!c.client && c.stage == Conn::Stage::kExchange))
        until = std::min(until, c.wake);
      if (!c.client && c.stage == Conn::Stage::kExchange) ++pending_at_gate;
      if (c.stage == Conn::Stage::kConnecting || c.stage == Conn::Stage::kExchange) {
        const short ev = (c.stage == Conn::Stage::kConnecting || !c.out.empty()) ? POLLOUT : POLLIN;
        fds.push_back({c.fd, ev, 0});
        of.push_back(&c);
      }
    }
    ::poll(fds.data(), fds.size(), socket_io::ms_left(until));
    now = Clock::now();

    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      if (!of[i]) {  // new connections at the gate
        for (;;) {
          sockaddr_storage ss{};
          socklen_t len = sizeof ss;
          const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          Conn g;
          g.fd = fd;
          g.from = sockaddr_text(ss);
          if (pending_at_gate >= max_pending_at_gate) {
            drop_stranger(&g);
            continue;
          }
          ++pending_at_gate;
          g.stage = Conn::Stage::kExchange;
          g.nonce = random_bytes(kGateNonceBytes);
          g.out = g.nonce;
          g.want = kGateHelloBytes;
          g.wake = now + kGateConnectionDeadline;
          conns.push_back(g);  // polled from the next round on
        }
        continue;
      }
      Conn* c = of[i];
      if (c->stage == Conn::Stage::kConnecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (fds[i].revents & (POLLERR | POLLHUP))) {
          retry_later(c, now);
          continue;
        }
        c->stage = Conn::Stage::kExchange;
        c->want = kGateNonceBytes;
        continue;
      }
      // kExchange: write what is queued, else read toward `want`.
      if (!c->out.empty()) {
        const ssize_t n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
        if (n > 0)
          c->out.erase(0, size_t(n));
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
          c->client ? retry_later(c, now) : drop_stranger(c);
        if (c->stage == Conn::Stage::kExchange && c->out.empty() && !c->client && c->mesh >= 0) finish(c);
        continue;
      }
      char buf[kGateHelloBytes];
      const ssize_t n = ::recv(c->fd, buf, c->want - c->in.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        c->client ? retry_later(c, now) : drop_stranger(c);
        continue;
      }
      if (n < 0) continue;
      c->in.append(buf, size_t(n));
      if (c->in.size() < c->want) continue;
      if (c->client && c->want == kGateNonceBytes) {  // the gate's nonce: answer with our proof
        c->nonce = random_bytes(kGateNonceBytes);
        c->out = gate_client_hello(secret_, c->in, c->nonce, c->mesh, rank_, c->peer);
        c->in.clear();
        c->want = kGateProofBytes;
      } else if (c->client) {  // the gate's proof
        if (!constant_time_equal(c->in, gate_server_proof(secret_, c->nonce, c->mesh, rank_, c->peer)))
          throw std::runtime_error("the Gloo gate of rank " + std::to_string(c->peer) + " at " + gates.at(c->peer) +
                                   " did not prove the job secret (a stranger published that address?)");
        finish(c);
      } else {  // the gate got a hello
        const GateVerdict v = check_gate_hello(secret_, c->nonce, c->in, meshes_, rank_, size_);
        if (!v.ok || sockets_[v.mesh][v.from] != -1) {
          drop_stranger(c);
          continue;
        }
        c->mesh = v.mesh;
        c->peer = v.from;
        c->out = gate_server_proof(secret_, c->in.substr(8, kGateNonceBytes), v.mesh, v.from, rank_);
        sockets_[v.mesh][v.from] = -2;  // reserved: a second hello for this pair is a stranger's replay
      }
    }

    // Timers: clients due for a retry connect again; silent connections at the gate are dropped.
    for (auto& c : conns) {
      if (c.client && c.stage == Conn::Stage::kRetryWait && now >= c.wake) connect_client(&c);
      if (c.client && c.stage == Conn::Stage::kClosed) retry_later(&c, now);
      if (!c.client && c.stage == Conn::Stage::kExchange && now >= c.wake) {
        if (c.mesh >= 0) sockets_[c.mesh][c.peer] = -1;
        drop_stranger(&c);
      }
    }
    conns.remove_if([](const Conn& c) { return !c.client && c.stage == Conn::Stage::kClosed; });
  }
  // Every pair is connected: whatever else reached the gate is a stranger's, waiting or not.
  for (auto& c : conns)
    if (!c.client && c.stage == Conn::Stage::kExchange) drop_stranger(&c);
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (fd < 0) break;
    ::close(fd);
    count_stranger(sockaddr_text(ss));
  }
  ::close(listen_fd_);
  listen_fd_ = -1;
}

std::string PairGate::missing_error(const std::string& budget) const {
  std::vector<int> missing;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    for (int m = 0; m < meshes_; ++m)
      if (sockets_[m][p] < 0) {
        missing.push_back(p);
        break;
      }
  }
  std::string s = "gloo could not connect: " + rank_list(missing) + " never completed the connect to this rank (" +
                  std::to_string(missing.size()) + " of " + std::to_string(size_ - 1) + " peers missing) within " +
                  budget;
  if (dropped_) s += "; " + dropped_summary();
  return s;
}
