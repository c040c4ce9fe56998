// munge_store_client: see munge_store_client.h.
#include "comm/munge_store_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "comm/socket_io.h"
#include "comm/store_munge.h"
#include "comm/store_protocol.h"
#include "src/shown_text.h"

namespace {

using namespace socket_io;

struct Refused : std::runtime_error {  // the server denied our credential: no point retrying
  using std::runtime_error::runtime_error;
};

bool test_hook_expired() {
  const char* v = std::getenv("BARESGD_TEST_MUNGE");
  return v != nullptr && std::string(v) == "expired";
}

// The handshake on a connected socket: "" when admitted, else what this port did (retry later).
// Throws Refused when the server denied our credential, runtime_error when munged fails us.
std::string handshake(int fd, const MungeStoreTarget& t, const std::string& where, Clock::time_point deadline) {
  std::string greeting;
  IoResult r = recv_frame(fd, &greeting, 1024, deadline);
  if (r.status == Io::kTimeout) return "connected, but no greeting";
  if (r.status != Io::kOk) return "closed before the greeting (" + io_text(r) + ")";
  const std::string prefix = kStoreMungeGreeting;
  if (greeting.size() != prefix.size() + 64 || greeting.compare(0, prefix.size(), prefix) != 0)
    return "not a baresgd MUNGE store (unexpected greeting)";
  const std::string server_nonce = greeting.substr(prefix.size());
  const std::string client_nonce = to_hex(random_bytes(32));
  const bool expire = test_hook_expired();
  const std::string cred = munge_encode_payload(munge_client_payload(t.step_payload, server_nonce, client_nonce),
                                                t.munge_socket, expire ? 1 : 0);
  if (expire) {  // the test hook's wait is not the server's silence: this attempt gets it on top
    std::this_thread::sleep_for(std::chrono::seconds(2));
    deadline += std::chrono::seconds(2);
  }
  r = send_all(fd, encode_frame(client_nonce + cred).data(), 4 + client_nonce.size() + cred.size(), deadline);
  std::string answer;
  if (r.status == Io::kOk) r = recv_frame(fd, &answer, 4096, deadline);
  if (r.status == Io::kTimeout) return "no answer to our credential";
  if (r.status != Io::kOk) return "closed during the handshake (" + io_text(r) + ")";
  if (answer.compare(0, 7, "DENIED ") == 0)
    throw Refused("rendezvous store " + where +
                  " (rank 0) refused this rank's MUNGE credential: " + shown_text(answer.substr(7)));
  if (answer.compare(0, 3, "OK ") != 0) return "answered the handshake with an unexpected reply";
  const DecodedCredential theirs = munge_decode_credential(answer.substr(3), t.munge_socket);
  const std::string why = check_munge_credential(theirs, ::getuid(), munge_server_payload(t.step_payload, client_nonce),
                                                 "store server " + where);
  return why;  // "" = admitted both ways
}

}  // namespace

std::string describe_port_outcomes(const std::string& host, const std::vector<int>& ports,
                                   const std::vector<std::string>& outcomes) {
  std::string out;
  for (size_t i = 0; i < ports.size();) {
    size_t j = i;
    while (j + 1 < ports.size() && ports[j + 1] == ports[j] + 1 && outcomes[j + 1] == outcomes[i]) ++j;
    out += (out.empty() ? "" : ", ") + host + ":" + std::to_string(ports[i]) +
           (j > i ? "-" + std::to_string(ports[j]) : "") + " (" + outcomes[i] + ")";
    i = j + 1;
  }
  return out;
}

int munge_store_connect(const MungeStoreTarget& t, std::chrono::milliseconds timeout, std::string* where) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (::inet_pton(AF_INET, t.addr.c_str(), &sa.sin_addr) != 1)
    throw std::runtime_error("rank 0's node " + t.host + ": '" + t.addr + "' is not an IPv4 address");
  addrinfo ai{};
  ai.ai_family = AF_INET;
  ai.ai_socktype = SOCK_STREAM;
  ai.ai_addr = reinterpret_cast<sockaddr*>(&sa);
  ai.ai_addrlen = sizeof sa;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<std::string> outcomes(t.ports.size(), "not tried");
  Backoff backoff(std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  // A silent port costs at most this per round, so every port is tried within the timeout.
  const auto share = timeout / static_cast<int64_t>(2 * std::max<size_t>(1, t.ports.size()));
  const auto probe_timeout = std::clamp<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(share), std::chrono::milliseconds(200), kMungeProbeTimeout);
  for (;;) {
    for (size_t i = 0; i < t.ports.size() && Clock::now() < deadline; ++i) {
      sa.sin_port = htons(static_cast<uint16_t>(t.ports[i]));
      const std::string at = t.host + ":" + std::to_string(t.ports[i]);
      const Clock::time_point probe = std::min(deadline, Clock::now() + probe_timeout);
      std::string why;
      int fd = connect_once(&ai, probe, &why);
      if (fd < 0) {
        outcomes[i] = why;
        continue;
      }
      try {
        why = handshake(fd, t, at, probe);
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (why.empty()) {
        *where = at;
        return fd;
      }
      outcomes[i] = why;
      ::close(fd);
    }
    if (!backoff.wait(deadline))
      throw std::runtime_error(
          "rank 0's rendezvous store on node " + t.host + " (" + t.addr +
          ") did not complete the MUNGE handshake within " + std::to_string(timeout.count()) +
          " ms on any port of this job step: " + describe_port_outcomes(t.host, t.ports, outcomes));
  }
}
