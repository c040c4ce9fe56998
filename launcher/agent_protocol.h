// agent_protocol: what ./launch writes to `launch --agent` over ssh's stdin, and the status lines the
// agent writes back on the rank's stderr. Pure encode/decode.
//
// launcher -> agent (ssh stdin):
//   "BSGD-AGENT-1\n", then one frame: u32 big-endian length, then a list of strings, each a u32
//   big-endian length and its bytes:
//     nonce, openblas_local_size ("0" = the launcher already set OPENBLAS_NUM_THREADS),
//     env count, "NAME=value"..., argv count, argv...,
//     optionally (heartbeats on): heartbeat timeout ms, heartbeat interval ms
//     (a frame without them is the original format and still valid: heartbeats off)
//   then single control bytes for as long as the job runs:
//     'T' SIGTERM, 'I' SIGINT, 'H' SIGHUP, 'U' SIGUSR1, 'K' SIGKILL to the rank's process tree;
//     'P' ping: the launcher is alive (every heartbeat interval; other bytes count as well).
//   EOF (launcher gone, ssh session lost) = SIGTERM the rank's group, SIGKILL after a grace period.
//   No byte for the heartbeat timeout (a partition, a stopped launcher) = the same, and exit.
// The environment (with BARESGD_SECRET) travels only here, never on a command line.
//
// agent -> launcher (the rank's stderr, which is the ssh channel's stderr):
//   "@@BSGD-AGENT <nonce> pid <pid>\n"                before the rank runs (so before its output)
//   "@@BSGD-AGENT <nonce> exit <code>\n" or "... signal <n>\n"   after the rank's tree is gone
//   "@@BSGD-AGENT <nonce> alive <agent pid>\n"        heartbeats on: first before the pid line, then
//                                                     every interval until the status line
// The nonce is random per job, so rank output cannot forge these lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

constexpr const char* kAgentMagic = "BSGD-AGENT-1\n";
constexpr uint32_t kAgentMaxFrame = 64u << 20;

struct AgentRequest {
  std::string nonce;
  int openblas_local_size = 0;
  std::vector<std::string> env;    // "NAME=value"
  std::vector<std::string> argv;   // argv[0] is looked up in PATH (of env) when it has no '/'
  long heartbeat_timeout_ms = 0;   // 0 = no heartbeats (and the two fields are not encoded)
  long heartbeat_interval_ms = 0;  // > 0 and < heartbeat_timeout_ms when heartbeats are on
};

constexpr char kAgentPing = 'P';
constexpr long kMaxHeartbeatMs = 100000000;  // the limit of --heartbeat-timeout (1e5 s)

// Magic + frame.
std::string encode_agent_request(const AgentRequest& req);
// Parses the frame body (after magic and length). False when malformed.
bool decode_agent_request(const std::string& body, AgentRequest* req);

char agent_control_byte(int sig);  // SIGTERM -> 'T' ...; 0 for signals without one
int agent_control_signal(char c);  // 'T' -> SIGTERM ...; 0 for other bytes

std::string agent_marker_prefix(const std::string& nonce);  // "@@BSGD-AGENT <nonce> "
std::string agent_pid_line(const std::string& nonce, long pid);
// status: a waitpid() status of the rank.
std::string agent_status_line(const std::string& nonce, int wait_status);
std::string agent_alive_line(const std::string& nonce, long agent_pid);

// What a marker line says. Returns false if text holds no marker of this nonce. Otherwise sets
// *before to the bytes in front of the marker (a partial line of the rank's, usually empty) and
// fills kind ("pid", "exit", "signal", "alive") and value.
bool parse_agent_marker(const std::string& text, const std::string& nonce, std::string* before, std::string* kind,
                        long* value);
