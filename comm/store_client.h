// store_client: a rank's authenticated connection to the launcher's rendezvous store.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

class StoreClient {
 public:
  // Connects to addr ("host:port"), retrying until timeout; authenticates with secret.
  // Throws std::runtime_error naming the address and the reason (refused, timeout, denied).
  StoreClient(const std::string& addr, const std::string& secret, std::chrono::milliseconds timeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  bool try_get(const std::string& key, std::string* value);
  // Polls until key exists; throws after timeout naming the key.
  std::string wait_get(const std::string& key, std::chrono::milliseconds timeout);
  int64_t add(const std::string& key, int64_t delta);

 private:
  int fd_ = -1;
  std::string addr_;
};
