// store_client: a rank's authenticated connection to the launcher's rendezvous store.
// Not thread-safe: one client per thread (or guard it). Every request (send + reply) must finish
// within max(timeout, 5 s), else it throws; after any error the connection is closed and further
// calls throw too.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "comm/store_protocol.h"

class StoreClient {
 public:
  // Connects to addr ("host:port"), retrying until timeout; authenticates with secret.
  // Throws std::runtime_error naming the address and the reason (refused, timeout, denied).
  StoreClient(const std::string& addr, const std::string& secret, std::chrono::milliseconds timeout);
  // Takes over fd, a connected non-blocking socket already through its handshake (the MUNGE
  // store's, comm/munge_store_client.h); addr names the store in errors.
  StoreClient(int authenticated_fd, const std::string& addr, std::chrono::milliseconds timeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  bool try_get(const std::string& key, std::string* value);
  // Polls until key exists; throws after timeout naming the key. ./train does not call it (Gloo
  // waits through its own store adapter over try_get, comm/backend_gloo.cc); it stays here, not in
  // a test helper, because it is the client's contract for a plain rank: tests/test_store.cc and
  // tests/tool_launch_store.cc (a stand-in rank for ./launch's tests) use it as ranks would.
  std::string wait_get(const std::string& key, std::chrono::milliseconds timeout);
  int64_t add(const std::string& key, int64_t delta);
  // One gather ('P', comm/store_protocol.h): true with every key under prefix (and its value) once
  // at least `want` exist; else false with *have set to how many do.
  bool try_gather(const std::string& prefix, uint32_t want, GatheredKeys* entries, uint32_t* have);

 private:
  enum class Handshake { kOk, kRetry };
  Handshake handshake(const std::string& secret, std::chrono::steady_clock::time_point deadline, std::string* why);
  // Sends one request frame and returns the reply frame's body.
  std::string request(const std::string& body, const char* what, const std::string& key);
  [[noreturn]] void fail(const std::string& what);  // closes the socket, throws naming addr_
  void close_socket();

  int fd_ = -1;
  std::string addr_;
  std::chrono::milliseconds io_timeout_;
};
