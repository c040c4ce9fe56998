// store_munge_check: the pure rules of the MUNGE store handshake ("BSGD-STORE-MUNGE-1") that lets
// srun's tasks reach rank 0's rendezvous store without a shared secret: what a credential's
// payload must say (this Slurm job step), whom it must come from (our own uid), which munge
// statuses refuse it (expired, replayed, ...), and the port sequence both sides derive from the
// job step. No libmunge here (see store_munge.h for the thin shell around munge_encode/decode).
#pragma once
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

constexpr const char* kStoreMungeGreeting = "BSGD-STORE-MUNGE-1";
// The store port of a Slurm step is kStoreMungePortBase + (job*7919 + step) % kStoreMungePortSpan;
// on EADDRINUSE rank 0 tries the next ones (wrapping inside the range), up to kStoreMungePortTries.
constexpr int kStoreMungePortBase = 47000;
constexpr int kStoreMungePortSpan = 2000;
constexpr int kStoreMungePortTries = 16;

// What munge_decode() reported, reduced to what the check needs (munge_err_t without munge.h).
enum class MungeStatus { kOk, kExpired, kReplayed, kRewound, kInvalid, kSocket, kOther };

struct DecodedCredential {
  MungeStatus status = MungeStatus::kOther;
  std::string status_text;  // munge_strerror() or the context's error string
  uid_t uid = 0;
  std::string payload;
};

// The payload that names one job step: "baresgd-store job=<job> step=<step>".
std::string munge_step_payload(const std::string& job_id, const std::string& step_id);
// What each side's credential carries on one connection, binding it to both nonces (64 hex
// characters each) so that neither can be replayed into another connection or reflected back:
// the client's "<step payload> client-hello server-nonce=<sn> client-nonce=<cn>", the server's
// "<step payload> server-reply client-nonce=<cn>".
std::string munge_client_payload(const std::string& step_payload, const std::string& server_nonce,
                                 const std::string& client_nonce);
std::string munge_server_payload(const std::string& step_payload, const std::string& client_nonce);
// "" if cred admits the peer, else one line naming what is wrong. peer names the other side
// (e.g. "client 127.0.0.1:5312" or "store server node1:47012").
std::string check_munge_credential(const DecodedCredential& cred, uid_t expected_uid,
                                   const std::string& expected_payload, const std::string& peer);
// The ports, in order, that rank 0 tries to bind and clients try to reach for a job step.
// Throws std::invalid_argument naming the variable if job_id/step_id are not decimal numbers.
std::vector<int> store_munge_ports(const std::string& job_id, const std::string& step_id);
