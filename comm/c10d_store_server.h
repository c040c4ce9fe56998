// c10d_store_server: a server of PyTorch's c10d TCPStore protocol (comm/c10d_wire.h), the store the
// worker of global rank 0 hosts when torchrun runs without its agent's store (--standalone,
// --rdzv_backend c10d: TORCHELASTIC_USE_AGENT_STORE=False). Rank 0 serves it in a background
// thread while the ranks meet (comm/backend_gloo.cc); every rank, rank 0 included, talks to it
// through C10dStoreClient, and PyTorch's own TCPStore client can use it too.
//
// It serves what clients of PyTorch 1.13 send: SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS
// and DELETE_KEY (not WATCH_KEY's callbacks). One poll() thread, non-blocking sockets, one input
// and one output buffer per connection: a slow or silent client only holds its own connection.
// A malformed request, a request over the limits, GET of a missing key or ADD to a value that is
// not an integer closes that connection only (PyTorch's server closes it too) and is reported as
// one line through the problem sink.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

struct C10dStoreLimits {
  size_t max_connections = 4096;                // more are accepted and closed at once
  size_t max_stored_bytes = size_t(1) << 30;    // keys + values held; a SET past it closes that client
  size_t max_unsent_bytes = size_t(256) << 20;  // replies a client has not read; past it: closed
};

class C10dStoreServer {
 public:
  using ProblemSink = std::function<void(const std::string&)>;

  // Listens at `port` (0: an ephemeral port, for tests) on every address `host` resolves to
  // (MASTER_ADDR: "localhost" gives 127.0.0.1 and ::1; a node's name gives its address), and
  // starts serving. Throws std::runtime_error, one line naming host and port: the host does not
  // resolve, the port is in use, or no address could be bound.
  C10dStoreServer(const std::string& host, int port, ProblemSink on_problem = nullptr,
                  const C10dStoreLimits& limits = C10dStoreLimits());
  ~C10dStoreServer();  // stop()
  C10dStoreServer(const C10dStoreServer&) = delete;
  C10dStoreServer& operator=(const C10dStoreServer&) = delete;

  int port() const;
  // "host:port" as given (the port the listener got when 0 was asked).
  const std::string& where() const;
  // Closes every connection and the listeners; idempotent.
  void stop();

 private:
  struct State;
  std::unique_ptr<State> s_;
};
