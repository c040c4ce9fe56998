// shared_failure: a step only rank 0 performs (opening --metrics, preparing --checkpoint-dir)
// fails on every rank at once. Rank 0 prints its error BEFORE the broadcast that tells the others:
// they exit as soon as they know, the launcher then stops the whole job, and a line rank 0 meant
// to print after that point would be lost (the user would see only "rank 0 could not ...").
#pragma once
#include <stdexcept>
#include <string>

// An error whose "train: error: ..." line is already on stderr; main exits 1 without a second one.
struct PrintedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rank 0, before broadcasting the failure: "train: error: <error>\n" on stderr, flushed.
void print_rank0_error_now(const std::string& error);

// After the broadcast, on every rank: rank 0 throws PrintedError(rank0_error), the others
// std::runtime_error(peers_message).
[[noreturn]] void throw_shared_failure(int rank, const std::string& rank0_error, const std::string& peers_message);
