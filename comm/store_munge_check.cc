// store_munge_check: pure admission rules and port sequence of the MUNGE store handshake.
#include "comm/store_munge_check.h"

#include <stdexcept>

#include "src/shown_text.h"

std::string munge_step_payload(const std::string& job_id, const std::string& step_id) {
  return "baresgd-store job=" + job_id + " step=" + step_id;
}

std::string munge_client_payload(const std::string& step_payload, const std::string& server_nonce,
                                 const std::string& client_nonce) {
  return step_payload + " client-hello server-nonce=" + server_nonce + " client-nonce=" + client_nonce;
}

std::string munge_server_payload(const std::string& step_payload, const std::string& client_nonce) {
  return step_payload + " server-reply client-nonce=" + client_nonce;
}

namespace {

const char* status_reason(MungeStatus s) {
  switch (s) {
    case MungeStatus::kExpired:
      return "expired";
    case MungeStatus::kReplayed:
      return "replayed";
    case MungeStatus::kRewound:
      return "rewound (created in the future: clocks differ)";
    case MungeStatus::kInvalid:
      return "invalid";
    case MungeStatus::kSocket:
      return "munged unreachable";
    default:
      return "refused by munge";
  }
}

uint64_t parse_slurm_id(const std::string& text, const char* variable) {
  if (text.empty() || text.size() > 18) {
    throw std::invalid_argument(std::string(variable) + "=" + shown_text(text) +
                                " is not a Slurm id (a decimal number)");
  }
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw std::invalid_argument(std::string(variable) + "=" + shown_text(text) +
                                  " is not a Slurm id (a decimal number)");
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

}  // namespace

std::string check_munge_credential(const DecodedCredential& cred, uid_t expected_uid,
                                   const std::string& expected_payload, const std::string& peer) {
  if (cred.status != MungeStatus::kOk) {
    return "MUNGE credential from " + peer + " is " + status_reason(cred.status) + ": " + shown_text(cred.status_text);
  }
  if (cred.uid != expected_uid) {
    return "MUNGE credential from " + peer + " belongs to uid " + std::to_string(cred.uid) + ", not this job's uid " +
           std::to_string(expected_uid);
  }
  if (cred.payload != expected_payload) {
    return "MUNGE credential from " + peer + " is for " + shown_text(cred.payload) + ", not this job step (" +
           expected_payload + ")";
  }
  return "";
}

std::vector<int> store_munge_ports(const std::string& job_id, const std::string& step_id) {
  uint64_t job = parse_slurm_id(job_id, "SLURM_JOB_ID");
  uint64_t step = parse_slurm_id(step_id, "SLURM_STEP_ID");
  uint64_t first = (job * 7919u + step) % kStoreMungePortSpan;
  std::vector<int> ports;
  for (int i = 0; i < kStoreMungePortTries; ++i) {
    ports.push_back(kStoreMungePortBase + static_cast<int>((first + i) % kStoreMungePortSpan));
  }
  return ports;
}
