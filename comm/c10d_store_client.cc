// c10d_store_client: see c10d_store_client.h. The socket is non-blocking; every wait is a poll()
// with a deadline (comm/socket_io), so a silent store costs at most the request timeout.
#include "comm/c10d_store_client.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "comm/c10d_wire.h"
#include "comm/socket_io.h"
#include "comm/store_protocol.h"

using namespace socket_io;

namespace {

constexpr std::chrono::milliseconds kMinIoTimeout{5000};

std::string quoted(const std::string& key) { return "'" + printable_key(key) + "'"; }

// PyTorch's own TCPStore client puts "/" before every key it sends; so do we, so that a key set
// here is the key torch.distributed code sees (and the other way round).
std::string wire(const std::string& key) { return kC10dKeyPrefix + key; }

}  // namespace

C10dStoreClient::C10dStoreClient(const std::string& addr, std::chrono::milliseconds timeout, const std::string& name)
    : what_(name + " at " + addr), io_timeout_(std::max(timeout, kMinIoTimeout)) {
  const std::string& what = what_;
  const AddrList res = resolve_host_port(addr, what);
  const Clock::time_point deadline = Clock::now() + timeout;
  Backoff backoff(std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  std::string why = "not tried";
  for (;;) {
    for (const addrinfo* ai = res.get(); ai != nullptr && fd_ < 0; ai = ai->ai_next)
      fd_ = connect_once(ai, deadline, &why);
    if (fd_ >= 0) return;
    if (!backoff.wait(deadline))
      throw std::runtime_error(what + " not reachable within " + std::to_string(timeout.count()) + " ms: " + why);
  }
}

C10dStoreClient::~C10dStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

void C10dStoreClient::fail(const std::string& what) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  throw std::runtime_error(what_ + " " + what);
}

void C10dStoreClient::send_request(const std::string& bytes, const std::string& op) {
  if (fd_ < 0)
    throw std::runtime_error(what_ + ": cannot " + op + ": the connection was closed after an earlier error");
  const IoResult r = send_all(fd_, bytes.data(), bytes.size(), Clock::now() + io_timeout_);
  if (r.status == Io::kTimeout) fail("did not take " + op + " within " + std::to_string(io_timeout_.count()) + " ms");
  if (r.status != Io::kOk) fail("failed during " + op + ": " + io_text(r));
}

std::string C10dStoreClient::receive(size_t n, const std::string& op) {
  std::string out;
  const IoResult r = recv_exact(fd_, &out, n, Clock::now() + io_timeout_);
  if (r.status == Io::kTimeout) fail("did not answer " + op + " within " + std::to_string(io_timeout_.count()) + " ms");
  if (r.status == Io::kClosed) fail("closed the connection during " + op);
  if (r.status != Io::kOk) fail("failed during " + op + ": " + io_text(r));
  return out;
}

void C10dStoreClient::set(const std::string& key, const std::string& value) {
  send_request(encode_c10d_set(wire(key), value), "set of key " + quoted(key));
}

bool C10dStoreClient::check(const std::string& key) {
  const std::string op = "check of key " + quoted(key);
  send_request(encode_c10d_check({wire(key)}), op);
  const std::string reply = receive(1, op);
  try {
    return c10d_check_reply_ready(static_cast<uint8_t>(reply[0]));
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

std::string C10dStoreClient::get(const std::string& key) {
  const std::string op = "get of key " + quoted(key);
  send_request(encode_c10d_get(wire(key)), op);
  const std::string head = receive(8, op);
  uint64_t n = 0;
  try {
    n = c10d_get_reply_length(head.data());
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return receive(static_cast<size_t>(n), op);
}

int64_t C10dStoreClient::add(const std::string& key, int64_t delta) {
  const std::string op = "add to key " + quoted(key);
  send_request(encode_c10d_add(wire(key), delta), op);
  return static_cast<int64_t>(get_u64le(receive(8, op).data()));
}
