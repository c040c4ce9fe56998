// fuzz_agent_protocol: libFuzzer target for the launcher <-> agent protocol
// (launcher/agent_protocol.h).
//
// Input: byte 0 = mode, the rest by mode:
//   mode % 4 == 0  a spawn-request stream as the agent reads it from ssh's stdin (magic, u32
//                  big-endian length, body), framed the way launcher/agent.cc checks it, then
//                  decode_agent_request on the body;
//   mode % 4 == 1  a bare body for decode_agent_request;
//   mode % 4 == 2  structured: an AgentRequest built from the input (nonce, env, argv of
//                  arbitrary bytes), encoded, damaged by (offset, xor) edits or truncated, decoded;
//   mode % 4 == 3  status lines: byte 1 = nonce length, then the nonce, then a line of rank
//                  output; parse_agent_marker on it, and on it with a genuine pid / exit /
//                  signal / alive (heartbeat) marker appended.
// Contract checked: decoding never reads out of bounds or throws; an accepted request has a
// non-empty nonce, env entries NAME=value with a non-empty NAME and no NUL, argv[0] non-empty,
// no NUL in argv, heartbeats either off (both fields 0) or 1 <= interval < timeout <=
// kMaxHeartbeatMs, and re-encodes to a request that decodes to the same thing (heartbeat fields
// included); a well-formed request always round-trips, with or without heartbeats. parse_agent_marker finds the genuine marker after any rank output
// (so rank output cannot hide it), gives back the text before it unchanged, and on arbitrary
// text reports only pid/exit/signal/alive with a value of at most 10 digits. Control bytes and signals
// map one to one.
//
// Build: make fuzz (build-fuzz/fuzz_agent_protocol); run: .ci/fuzz.sh
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/agent_protocol.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

bool same(const AgentRequest& a, const AgentRequest& b) {
  return a.nonce == b.nonce && a.openblas_local_size == b.openblas_local_size && a.env == b.env && a.argv == b.argv &&
         a.heartbeat_timeout_ms == b.heartbeat_timeout_ms && a.heartbeat_interval_ms == b.heartbeat_interval_ms;
}

void check_decode(const std::string& body) {
  AgentRequest req;
  if (!decode_agent_request(body, &req)) return;
  FUZZ_CHECK(!req.nonce.empty());
  FUZZ_CHECK(req.openblas_local_size >= 0);
  for (const std::string& e : req.env) {
    FUZZ_CHECK(e.find('=') != std::string::npos && e[0] != '=');
    FUZZ_CHECK(e.find('\0') == std::string::npos);
  }
  FUZZ_CHECK(!req.argv.empty() && !req.argv[0].empty());
  for (const std::string& a : req.argv) FUZZ_CHECK(a.find('\0') == std::string::npos);
  if (req.heartbeat_timeout_ms == 0) {
    FUZZ_CHECK(req.heartbeat_interval_ms == 0);
  } else {
    FUZZ_CHECK(req.heartbeat_timeout_ms <= kMaxHeartbeatMs);
    FUZZ_CHECK(req.heartbeat_interval_ms >= 1 && req.heartbeat_interval_ms < req.heartbeat_timeout_ms);
  }
  const std::string enc = encode_agent_request(req);
  const size_t magic = std::strlen(kAgentMagic);
  FUZZ_CHECK(enc.compare(0, magic, kAgentMagic) == 0);
  AgentRequest again;
  FUZZ_CHECK(decode_agent_request(enc.substr(magic + 4), &again));
  FUZZ_CHECK(same(req, again));
  // Numbers re-encode canonically ("007" -> "7"), so the new body is never longer.
  FUZZ_CHECK(enc.size() - magic - 4 <= body.size());
}

void stream_mode(const std::string& s) {
  // launcher/agent.cc: magic, then a u32 big-endian length <= kAgentMaxFrame, then the body.
  const size_t magic = std::strlen(kAgentMagic);
  if (s.size() < magic + 4 || s.compare(0, magic, kAgentMagic) != 0) return;
  const unsigned char* lb = reinterpret_cast<const unsigned char*>(s.data() + magic);
  const uint32_t len = (uint32_t(lb[0]) << 24) | (uint32_t(lb[1]) << 16) | (uint32_t(lb[2]) << 8) | uint32_t(lb[3]);
  if (len > kAgentMaxFrame || s.size() - magic - 4 < len) return;
  check_decode(s.substr(magic + 4, len));
}

void structured_mode(FuzzInput& in) {
  AgentRequest req;
  req.nonce = in.bytes(1 + in.u8() % 16);
  if (req.nonce.empty()) req.nonce = "n";
  req.openblas_local_size = in.u8();
  const int nenv = in.u8() % 5;
  for (int k = 0; k < nenv; ++k) {
    std::string name = in.bytes(1 + in.u8() % 8), value = in.bytes(in.u8() % 16);
    for (char& c : name)
      if (c == '=' || c == '\0') c = 'X';
    for (char& c : value)
      if (c == '\0') c = 'Z';
    if (name.empty()) name = "E";
    req.env.push_back(name + "=" + value);
  }
  const int nargv = 1 + in.u8() % 5;
  for (int k = 0; k < nargv; ++k) {
    std::string a = in.bytes(in.u8() % 16);
    for (char& c : a)
      if (c == '\0') c = 'A';
    if (k == 0 && a.empty()) a = "prog";
    req.argv.push_back(a);
  }
  if (in.bit()) {  // heartbeats on: any valid pair, the limits included
    const uint32_t t = in.u32();
    req.heartbeat_timeout_ms = 2 + long(t % uint32_t(kMaxHeartbeatMs - 1));
    if (in.bit()) req.heartbeat_timeout_ms = in.bit() ? 2 : kMaxHeartbeatMs;
    req.heartbeat_interval_ms = 1 + long(in.u32() % uint32_t(req.heartbeat_timeout_ms - 1));
  }
  const std::string enc = encode_agent_request(req);
  const size_t magic = std::strlen(kAgentMagic);
  std::string body = enc.substr(magic + 4);
  const int edits = in.u8() % 4;
  if (edits == 0) {
    AgentRequest got;
    FUZZ_CHECK(decode_agent_request(body, &got));
    FUZZ_CHECK(same(req, got));
  }
  for (int k = 0; k < edits && !body.empty(); ++k) {
    const size_t at = in.u16() % body.size();
    body[at] = char(body[at] ^ (in.u8() | 1));
  }
  if (in.bit()) body.resize(in.u16() % (body.size() + 1));
  check_decode(body);
}

void marker_mode(FuzzInput& in) {
  std::string nonce = in.bytes(in.u8() % 24);
  const std::string text = in.bytes(in.u16() % 512);
  std::string before, kind;
  long value = -1;
  if (parse_agent_marker(text, nonce, &before, &kind, &value)) {
    FUZZ_CHECK(kind == "pid" || kind == "exit" || kind == "signal" || kind == "alive");
    FUZZ_CHECK(value >= 0 && value <= 9999999999L);
    FUZZ_CHECK(text.compare(0, before.size(), before) == 0);
    FUZZ_CHECK(text.compare(before.size(), agent_marker_prefix(nonce).size(), agent_marker_prefix(nonce)) == 0);
  }
  if (nonce.empty()) return;  // the launcher's nonce is never empty
  // A genuine marker after arbitrary rank output (no newline inside one line) is found.
  std::string out_text = text;
  for (char& c : out_text)
    if (c == '\n') c = ' ';
  const uint8_t which = in.u8() % 4;
  const long v = long(in.u32() % 4000000);
  std::string line;
  if (which == 0)
    line = agent_pid_line(nonce, v);
  else if (which == 1)
    line = agent_status_line(nonce, int(v % 256) << 8);  // exited
  else if (which == 2)
    line = agent_status_line(nonce, int(1 + v % 64) & 0x7f);  // signalled
  else
    line = agent_alive_line(nonce, v);  // heartbeat
  FUZZ_CHECK(!line.empty() && line.back() == '\n');
  line.pop_back();
  if (line.find('\n') != std::string::npos) return;  // a nonce with a newline cannot be one line
  FUZZ_CHECK(parse_agent_marker(out_text + line, nonce, &before, &kind, &value));
  FUZZ_CHECK(before == out_text);
  if (which == 0) FUZZ_CHECK(kind == "pid" && value == v);
  if (which == 1) FUZZ_CHECK(kind == "exit" && value == v % 256);
  if (which == 2) FUZZ_CHECK(kind == "signal" && value == 1 + v % 64);
  if (which == 3) FUZZ_CHECK(kind == "alive" && value == v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const uint8_t mode = in.u8();
  switch (mode % 4) {
    case 0:
      stream_mode(in.rest());
      break;
    case 1:
      check_decode(in.rest());
      break;
    case 2:
      structured_mode(in);
      break;
    case 3:
      marker_mode(in);
      break;
  }
  // Control bytes: one signal per byte and back.
  const char c = char(mode);
  const int sig = agent_control_signal(c);
  if (sig != 0) FUZZ_CHECK(agent_control_byte(sig) == c);
  const int s = mode % 65;
  const char b = agent_control_byte(s);
  if (b != 0) FUZZ_CHECK(agent_control_signal(b) == s);
  return 0;
}
