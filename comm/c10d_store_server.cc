// c10d_store_server: see c10d_store_server.h. In order:
//   1. listening: every address MASTER_ADDR resolves to, at MASTER_PORT;
//   2. the table: the keys and values, and the clients waiting for keys (WAIT);
//   3. the requests: what each query does to the table and what it answers;
//   4. the connections: one poll() thread reads requests, writes replies, accepts clients.
// Costs: a request costs one map operation (log of the number of keys); a key that is set wakes
// its waiters by a scan of the waiting list (rank count x keys waited for: at start-up, small).
#include "comm/c10d_store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "comm/c10d_wire.h"
#include "comm/store_protocol.h"

namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string quoted(const std::string& key) { return "'" + printable_key(key) + "'"; }

// ---- 1. Listening. ----
//
// MASTER_ADDR names the host the workers connect to. Binding exactly its addresses (not the
// wildcard) keeps the store off every other interface: loopback in tests, the node's address on a
// cluster. "localhost" resolves to 127.0.0.1 and ::1; both are bound (an IPv6 socket set
// IPV6_V6ONLY, so the two do not collide), and an address this host does not have (::1 where IPv6
// is off) is skipped as long as one is bound. A port in use is an error at once: another job's
// store, or an old rank 0, is there.

std::string address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    return std::string("[") +
           (inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf) ? buf : "?") +
           "]";
  return buf;
}

void set_port(sockaddr* sa, int port) {
  if (sa->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(sa)->sin_port = htons(static_cast<uint16_t>(port));
  if (sa->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(sa)->sin6_port = htons(static_cast<uint16_t>(port));
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  return ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                  : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

// One listening socket on *sa (port already in it); -1 and *err = errno on failure.
int listen_one(sockaddr* sa, socklen_t len, int* err) {
  const int fd = ::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (sa->sa_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, sa, len) != 0 || ::listen(fd, 1024) != 0) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

struct Listeners {
  std::vector<int> fds;
  int port = 0;
};

Listeners listen_on(const std::string& host, int port, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) throw std::runtime_error(where + ": cannot resolve '" + host + "': " + gai_strerror(rc));
  Listeners l;
  l.port = port;
  std::vector<std::string> seen;
  std::string why;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const std::string addr = address_text(ai->ai_addr);
    bool dup = false;
    for (const auto& s : seen) dup = dup || s == addr;
    if (dup) continue;
    seen.push_back(addr);
    set_port(ai->ai_addr, l.port);
    int err = 0;
    const int fd = listen_one(ai->ai_addr, ai->ai_addrlen, &err);
    if (fd < 0 && err == EADDRINUSE) {
      for (int f : l.fds) ::close(f);
      freeaddrinfo(res);
      throw std::runtime_error(where + ": port " + std::to_string(l.port) + " is already in use on " + addr +
                               " (another job's store, or another program?)");
    }
    if (fd < 0) {
      if (why.empty()) why = "cannot listen on " + addr + ": " + errno_text(err);
      continue;
    }
    l.fds.push_back(fd);
    if (l.port == 0) l.port = bound_port(fd);
  }
  freeaddrinfo(res);
  if (l.fds.empty()) throw std::runtime_error(where + ": " + (why.empty() ? "no address to listen on" : why));
  return l;
}

// ---- 2. The table. ----

struct Connection {
  int fd = -1;
  std::string peer;  // "addr:port", for the problem lines
  std::string in;    // bytes read, the start of the next request first
  std::string out;   // replies not yet written
  bool closed = false;
};

struct Waiter {
  Connection* conn;
  std::vector<std::string> keys;
};

class Table {
 public:
  explicit Table(size_t max_bytes) : max_bytes_(max_bytes) {}

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string* find(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  size_t size() const { return values_.size(); }

  // Sets key; "" or why not (the store is full). A new key wakes the clients waiting for it.
  std::string set(const std::string& key, const std::string& value) {
    auto it = values_.find(key);
    const size_t old = it == values_.end() ? 0 : key.size() + it->second.size();
    if (bytes_ - old + key.size() + value.size() > max_bytes_)
      return "SET of key " + quoted(key) + " would make the store hold more than " + std::to_string(max_bytes_) +
             " bytes";
    bytes_ = bytes_ - old + key.size() + value.size();
    values_[key] = value;
    if (it == values_.end()) wake_waiters();
    return "";
  }
  bool erase(const std::string& key) {
    auto it = values_.find(key);
    if (it == values_.end()) return false;
    bytes_ -= key.size() + it->second.size();
    values_.erase(it);
    return true;
  }

  // WAIT: answers STOP_WAITING now if every key is set, else once the last of them is.
  void wait(Connection* c, std::vector<std::string> keys) {
    if (all_set(keys))
      c->out.push_back(static_cast<char>(kC10dStopWaiting));
    else
      waiters_.push_back({c, std::move(keys)});
  }
  void forget_waiters_of(const Connection* c) {
    waiters_.remove_if([c](const Waiter& w) { return w.conn == c; });
  }

 private:
  bool all_set(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!has(k)) return false;
    return true;
  }
  void wake_waiters() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (!all_set(it->keys)) {
        ++it;
        continue;
      }
      it->conn->out.push_back(static_cast<char>(kC10dStopWaiting));
      it = waiters_.erase(it);
    }
  }

  std::map<std::string, std::string> values_;
  std::list<Waiter> waiters_;
  size_t bytes_ = 0, max_bytes_;
};

// ---- 3. The requests. ----
//
// Each returns "" or why the connection must close (its client then sees the connection end,
// as with PyTorch's server).

// ADD's counters are stored as decimal text (PyTorch's server does the same, and clients GET them).
bool decimal_int64(const std::string& s, int64_t* v) {
  long long x = 0;
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, x);
  if (s.empty() || r.ec != std::errc() || r.ptr != end) return false;
  *v = x;
  return true;
}

std::string add(Table* t, Connection* c, const std::string& key, int64_t delta) {
  int64_t now = 0;
  if (const std::string* v = t->find(key))
    if (!decimal_int64(*v, &now)) return "ADD to key " + quoted(key) + ", whose value is not a decimal integer";
  if (__builtin_add_overflow(now, delta, &now)) return "ADD to key " + quoted(key) + " overflows a 64-bit integer";
  const std::string why = t->set(key, std::to_string(now));
  if (!why.empty()) return why;
  c->out += encode_c10d_i64_reply(now);
  return "";
}

// COMPARE_SET as PyTorch 1.13 answers it: a missing key is set only when `expected` is empty (else
// the reply is `expected` itself, and nothing is set); a present key takes `desired` when it
// holds `expected`; the reply is the value the key holds afterwards.
std::string compare_set(Table* t, Connection* c, const C10dRequest& r) {
  const std::string& key = r.keys[0];
  const std::string* now = t->find(key);
  if ((now == nullptr && r.value.empty()) || (now != nullptr && *now == r.value)) {
    const std::string why = t->set(key, r.desired);
    if (!why.empty()) return why;
    c->out += encode_c10d_value_reply(r.desired);
  } else {
    c->out += encode_c10d_value_reply(now != nullptr ? *now : r.value);
  }
  return "";
}

std::string apply(Table* t, Connection* c, C10dRequest& r) {
  switch (r.query) {
    case C10dQuery::kSet:
      return t->set(r.keys[0], r.value);
    case C10dQuery::kCompareSet:
      return compare_set(t, c, r);
    case C10dQuery::kGet:
      if (const std::string* v = t->find(r.keys[0])) {
        c->out += encode_c10d_value_reply(*v);
        return "";
      }
      return "GET of key " + quoted(r.keys[0]) + ", which is not set (a client asks only after CHECK or WAIT)";
    case C10dQuery::kAdd:
      return add(t, c, r.keys[0], r.delta);
    case C10dQuery::kCheck: {
      bool ready = true;
      for (const auto& k : r.keys) ready = ready && t->has(k);
      c->out.push_back(static_cast<char>(ready ? kC10dReady : kC10dNotReady));
      return "";
    }
    case C10dQuery::kWait:
      t->wait(c, std::move(r.keys));
      return "";
    case C10dQuery::kGetNumKeys:
      c->out += encode_c10d_i64_reply(static_cast<int64_t>(t->size()));
      return "";
    case C10dQuery::kDeleteKey:
      c->out += encode_c10d_i64_reply(t->erase(r.keys[0]) ? 1 : 0);
      return "";
    case C10dQuery::kWatchKey:
      return "WATCH_KEY of key " + quoted(r.keys[0]) + ": callbacks are not served by baresgd's c10d store";
  }
  return "unknown request";
}

}  // namespace

// ---- 4. The connections. ----

struct C10dStoreServer::State {
  std::string where;
  ProblemSink on_problem;
  C10dStoreLimits limits;
  Listeners listeners;
  int wake[2] = {-1, -1};
  int spare_fd = -1;  // a descriptor held back for when the process runs out (see accept_from)
  std::thread thread;
  std::mutex stop_mu;
  bool stopped = false;
  // Owned by the thread.
  Table table;
  std::vector<std::unique_ptr<Connection>> conns;

  explicit State(const C10dStoreLimits& l) : limits(l), table(l.max_stored_bytes) {}

  void problem(Connection* c, const std::string& why) {
    if (on_problem) on_problem("c10d TCPStore on " + where + ": closed the connection from " + c->peer + ": " + why);
    c->closed = true;
  }

  // Decodes and answers every whole request in c->in.
  void serve_requests(Connection* c) {
    size_t done = 0;
    while (!c->closed) {
      C10dRequest r;
      size_t used = 0;
      try {
        used = parse_c10d_request(c->in.data() + done, c->in.size() - done, &r);
      } catch (const std::exception& e) {
        problem(c, e.what());
        break;
      }
      if (used == 0) break;
      done += used;
      const std::string why = apply(&table, c, r);
      if (!why.empty()) problem(c, why);
    }
    c->in.erase(0, done);
  }

  void read_from(Connection* c) {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
      if (n > 0) {
        c->in.append(buf, static_cast<size_t>(n));
        serve_requests(c);
        if (c->closed) return;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      c->closed = true;  // the client left (or its socket failed): nothing to report
      return;
    }
  }

  // Writes what the socket takes now; the rest waits for POLLOUT.
  void write_to(Connection* c) {
    size_t sent = 0;
    while (sent < c->out.size()) {
      const ssize_t n = ::send(c->fd, c->out.data() + sent, c->out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c->closed = true;
      return;
    }
    c->out.erase(0, sent);
    if (c->out.size() > limits.max_unsent_bytes)
      problem(c, "more than " + std::to_string(limits.max_unsent_bytes) + " bytes of replies left unread");
  }

  void accept_from(int listen_fd) {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
        // Out of descriptors: the waiting client would keep the listener readable and poll()
        // spinning. Spend the spare descriptor to accept it and close it at once.
        ::close(spare_fd);
        const int dropped = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (dropped >= 0) ::close(dropped);
        spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        continue;
      }
      if (fd < 0) return;  // EAGAIN: no more; anything else: try again on the next wake-up
      if (conns.size() >= limits.max_connections) {
        ::close(fd);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->peer = address_text(reinterpret_cast<sockaddr*>(&ss)) + ":" + std::to_string(bound_port_of(ss));
      conns.push_back(std::move(c));
    }
  }
  static int bound_port_of(const sockaddr_storage& ss) {
    return ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port)
                                    : ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  }

  void drop_closed() {
    for (size_t i = 0; i < conns.size();) {
      if (!conns[i]->closed) {
        ++i;
        continue;
      }
      table.forget_waiters_of(conns[i].get());
      ::close(conns[i]->fd);
      conns.erase(conns.begin() + static_cast<long>(i));
    }
  }

  // The thread: poll the wake pipe, the listeners and every connection until stop().
  void serve() {
    for (;;) {
      std::vector<pollfd> fds;
      fds.push_back({wake[0], POLLIN, 0});
      for (int fd : listeners.fds) fds.push_back({fd, POLLIN, 0});
      const size_t first_conn = fds.size(), nconns = conns.size();
      for (const auto& c : conns)
        fds.push_back({c->fd, static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      for (size_t i = 0; i < nconns; ++i) {
        Connection* c = conns[i].get();
        const short ev = fds[first_conn + i].revents;
        if (ev & (POLLIN | POLLHUP | POLLERR)) read_from(c);
        if (!c->closed && !c->out.empty()) write_to(c);
      }
      // A SET on one connection may have woken a waiter on another: write to those too.
      for (auto& c : conns)
        if (!c->closed && !c->out.empty()) write_to(c.get());
      drop_closed();
      for (size_t i = 1; i < first_conn; ++i)
        if (fds[i].revents & POLLIN) accept_from(fds[i].fd);
    }
  }
};

C10dStoreServer::C10dStoreServer(const std::string& host, int port, ProblemSink on_problem,
                                 const C10dStoreLimits& limits)
    : s_(new State(limits)) {
  const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::string asked = "cannot serve the c10d TCPStore on " + shown_host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) throw std::runtime_error(asked + ": not a port");
  s_->listeners = listen_on(host, port, asked);
  s_->where = shown_host + ":" + std::to_string(s_->listeners.port);
  s_->on_problem = std::move(on_problem);
  if (::pipe2(s_->wake, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : s_->listeners.fds) ::close(fd);
    throw std::runtime_error(asked + ": pipe: " + errno_text(e));
  }
  s_->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  s_->thread = std::thread([this] { s_->serve(); });
}

C10dStoreServer::~C10dStoreServer() { stop(); }

int C10dStoreServer::port() const { return s_->listeners.port; }
const std::string& C10dStoreServer::where() const { return s_->where; }

void C10dStoreServer::stop() {
  std::lock_guard<std::mutex> lock(s_->stop_mu);
  if (s_->stopped) return;
  s_->stopped = true;
  const char byte = 1;
  while (::write(s_->wake[1], &byte, 1) < 0 && errno == EINTR) {}
  s_->thread.join();
  for (auto& c : s_->conns) ::close(c->fd);
  s_->conns.clear();
  for (int fd : s_->listeners.fds) ::close(fd);
  ::close(s_->wake[0]);
  ::close(s_->wake[1]);
  if (s_->spare_fd >= 0) ::close(s_->spare_fd);
}
