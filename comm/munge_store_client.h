// munge_store_client: a task's way into rank 0's MUNGE-authenticated rendezvous store (the
// handshake is in comm/munge_store_server.h). It tries the job step's ports in order on rank 0's
// node until one completes the mutual handshake: a port that refuses the connection, stays
// silent (for kMungeProbeTimeout, or less so that every port gets its turn within the
// timeout: timeout / (2 * ports), at least 200 ms), greets otherwise or answers with a credential that fails our
// check (another uid, another step or nonce: a rogue listener) is passed over and tried again
// in the next round, until the deadline. Then the error is one line naming every host:port tried
// and what each did. The server refusing our own credential ("DENIED <reason>") ends the
// attempt at once with that reason.
// Test hook: BARESGD_TEST_MUNGE=expired makes the credential live 1 s and waits 2 s before
// sending it, so the server sees an expired credential. Never set it otherwise.
#pragma once
#include <chrono>
#include <string>
#include <vector>

constexpr std::chrono::milliseconds kMungeProbeTimeout{2000};

struct MungeStoreTarget {
  std::string host;          // rank 0's node, as Slurm names it
  std::string addr;          // its IPv4 address
  std::vector<int> ports;    // the job step's sequence
  std::string step_payload;  // munge_step_payload(job, step)
  std::string munge_socket;  // "" = libmunge's default
};

// A connected, authenticated, non-blocking socket to the store; *where = "host:port".
// Throws std::runtime_error with one line when no port completes the handshake in time.
int munge_store_connect(const MungeStoreTarget& target, std::chrono::milliseconds timeout, std::string* where);

// "h:1 (refused), h:2-4 (no greeting)": consecutive ports with the same outcome joined.
std::string describe_port_outcomes(const std::string& host, const std::vector<int>& ports,
                                   const std::vector<std::string>& outcomes);
