// run_id: a new run's id, 64 random bits from /dev/urandom as 16 lowercase hex digits. A fresh
// ./train with --checkpoint-dir takes one; a --resume keeps the id of the run it continues.
#pragma once
#include <string>

// Throws std::runtime_error naming /dev/urandom when it cannot be read.
std::string new_run_id();
