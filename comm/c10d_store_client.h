// c10d_store_client: a client of PyTorch's c10d TCPStore, the store torchrun's agent serves at
// MASTER_ADDR:MASTER_PORT (wire format: comm/c10d_wire.h). Not thread-safe. Every request must
// finish within max(timeout, 5 s), else it throws naming the store and its address; after any error the
// connection is closed and further calls throw too.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

class C10dStoreClient {
 public:
  // Connects to addr ("host:port"), retrying until timeout. Throws std::runtime_error naming
  // the store (`name` + " at " + addr) and the reason (refused, timed out).
  C10dStoreClient(const std::string& addr, std::chrono::milliseconds timeout,
                  const std::string& name = "torchrun's c10d TCPStore");
  ~C10dStoreClient();
  C10dStoreClient(const C10dStoreClient&) = delete;
  C10dStoreClient& operator=(const C10dStoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  bool check(const std::string& key);       // true once key is set
  std::string get(const std::string& key);  // only after check(key) said true
  int64_t add(const std::string& key, int64_t delta);

 private:
  void send_request(const std::string& bytes, const std::string& op);
  std::string receive(size_t n, const std::string& op);
  [[noreturn]] void fail(const std::string& what);

  std::string what_;  // "<name> at <addr>", the start of every error
  std::chrono::milliseconds io_timeout_;
  int fd_ = -1;
};
