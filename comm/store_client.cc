// store_client: see store_client.h. The socket stays non-blocking and every wait goes through
// poll() with a deadline, so no call can hang longer than its timeout (connect, handshake and
// each request alike).
#include "comm/store_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "comm/socket_io.h"
#include "comm/store_protocol.h"

namespace {

using namespace socket_io;
constexpr std::chrono::milliseconds kMinIoTimeout{5000};

std::string quoted(const std::string& key) { return "'" + printable_key(key) + "'"; }

}  // namespace

StoreClient::StoreClient(const std::string& addr, const std::string& secret, std::chrono::milliseconds timeout)
    : addr_(addr), io_timeout_(std::max(timeout, kMinIoTimeout)) {
  const std::string prefix = "rendezvous store " + addr;
  const AddrList res = resolve_host_port(addr, prefix);
  if (secret.empty()) throw std::runtime_error(prefix + ": no job secret given");

  const Clock::time_point deadline = Clock::now() + timeout;
  Backoff backoff(std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  std::string why = "not tried";
  for (;;) {
    for (const addrinfo* ai = res.get(); ai != nullptr && fd_ < 0; ai = ai->ai_next) {
      fd_ = connect_once(ai, deadline, &why);
      if (fd_ >= 0 && handshake(secret, deadline, &why) != Handshake::kOk) close_socket();
    }
    if (fd_ >= 0) return;
    if (!backoff.wait(deadline))
      throw std::runtime_error(prefix + " not reachable within " + std::to_string(timeout.count()) + " ms: " + why);
  }
}

StoreClient::StoreClient(int authenticated_fd, const std::string& addr, std::chrono::milliseconds timeout)
    : fd_(authenticated_fd), addr_(addr), io_timeout_(std::max(timeout, kMinIoTimeout)) {}

StoreClient::~StoreClient() { close_socket(); }

void StoreClient::close_socket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StoreClient::fail(const std::string& what) {
  close_socket();
  throw std::runtime_error("rendezvous store " + addr_ + " " + what);
}

StoreClient::Handshake StoreClient::handshake(const std::string& secret, Clock::time_point deadline, std::string* why) {
  const std::string greeting_prefix = kStoreGreeting;
  std::string greeting;
  IoResult r = recv_frame(fd_, &greeting, 1024, deadline);
  if (r.status == Io::kTimeout) {
    *why = "connected, but no greeting arrived";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk && !(r.status == Io::kError && r.err == EMSGSIZE)) {
    // Closed or reset before the greeting: the server may be full or restarting; retry.
    *why = "connection closed before the greeting (" + io_text(r) + ")";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk || greeting.size() != greeting_prefix.size() + kStoreNonceBytes ||
      greeting.compare(0, greeting_prefix.size(), greeting_prefix) != 0)
    fail("is not a baresgd rendezvous store (unexpected greeting)");
  const std::string mac = hmac_sha256(secret, greeting.substr(greeting_prefix.size()));
  r = send_all(fd_, encode_frame(mac).data(), 4 + mac.size(), deadline);
  std::string answer;
  if (r.status == Io::kOk) r = recv_frame(fd_, &answer, 64, deadline);
  if (r.status == Io::kTimeout) {
    *why = "no answer to the authentication";
    return Handshake::kRetry;
  }
  if (r.status != Io::kOk) {
    *why = "connection closed during the handshake (" + io_text(r) + ")";
    return Handshake::kRetry;
  }
  if (answer == "OK") return Handshake::kOk;
  if (answer == "DENIED") fail("refused the job secret");
  fail("answered the handshake with an unexpected reply");
}

std::string StoreClient::request(const std::string& body, const char* what, const std::string& key) {
  const std::string op = std::string(what) + " of key " + quoted(key);
  if (fd_ < 0)
    throw std::runtime_error("rendezvous store " + addr_ + ": cannot " + op +
                             ": the connection was closed after an earlier error");
  if (body.size() > kMaxFrameBytes)
    throw std::runtime_error("rendezvous store " + addr_ + ": " + op + " is " + std::to_string(body.size()) +
                             " bytes, over the frame limit of " + std::to_string(kMaxFrameBytes));
  const Clock::time_point deadline = Clock::now() + io_timeout_;
  std::string head;
  put_u32be(&head, static_cast<uint32_t>(body.size()));
  IoResult r;
  if (body.size() <= 64 * 1024) {
    head += body;  // one segment for the common small request
    r = send_all(fd_, head.data(), head.size(), deadline);
  } else {
    r = send_all(fd_, head.data(), head.size(), deadline);
    if (r.status == Io::kOk) r = send_all(fd_, body.data(), body.size(), deadline);
  }
  std::string reply;
  if (r.status == Io::kOk) r = recv_frame(fd_, &reply, kMaxFrameBytes, deadline);
  switch (r.status) {
    case Io::kOk:
      break;
    case Io::kTimeout:
      fail("did not answer " + op + " within " + std::to_string(io_timeout_.count()) + " ms");
    case Io::kClosed:
      fail("closed the connection during " + op);
    case Io::kError:
      fail("connection failed during " + op + ": " + io_text(r));
  }
  const size_t plen = std::strlen(kStoreErrorPrefix);
  if (reply.size() > 8 && reply.compare(0, plen, kStoreErrorPrefix) == 0)
    throw std::runtime_error("rendezvous store " + addr_ + ": " + op + " failed: " + reply.substr(plen));
  return reply;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  const std::string reply = request(encode_set_request(key, value), "set", key);
  if (reply != "OK") fail("sent an unexpected reply to set of key " + quoted(key));
}

bool StoreClient::try_get(const std::string& key, std::string* value) {
  std::string reply = request(encode_get_request(key), "get", key);
  if (reply == "N") return false;
  if (reply.empty() || reply[0] != 'F') fail("sent an unexpected reply to get of key " + quoted(key));
  if (value != nullptr) value->assign(reply, 1, std::string::npos);
  return true;
}

std::string StoreClient::wait_get(const std::string& key, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(50));
  std::string value;
  for (;;) {
    if (try_get(key, &value)) return value;
    if (!backoff.wait(deadline))
      throw std::runtime_error("rendezvous store " + addr_ + ": key " + quoted(key) + " not set within " +
                               std::to_string(timeout.count()) + " ms");
  }
}

bool StoreClient::try_gather(const std::string& prefix, uint32_t want, GatheredKeys* entries, uint32_t* have) {
  const std::string reply = request(encode_gather_request(prefix, want), "gather", prefix + "*");
  uint32_t count = 0;
  if (!parse_gather_reply(reply.data(), reply.size(), entries, &count))
    fail("sent a malformed reply to the gather of keys " + quoted(prefix + "*"));
  *have = count;
  return reply[0] == 'F';
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  const std::string reply = request(encode_add_request(key, delta), "add", key);
  if (reply.size() != 8) fail("sent an unexpected reply to add of key " + quoted(key));
  return get_i64be(reply.data());
}
