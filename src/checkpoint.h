// checkpoint: the training state saved by rank 0 (parameters, momentum, epoch/batch position,
// step, and torch's default generator, which every rank holds alike: the dropout masks and
// DataLoader seeds still to come are drawn from it), written atomically (temp file, fsync,
// rename, fsync dir) with a magic, version and CRC-32 checksum. Version 3 holds either one
// momentum buffer every rank shares or, for --use-adasum on W > 1 ranks, each rank's own buffer
// (W of them, rank order); version 2 files (one buffer) still load; version 1 files (no
// generator) are refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/torch_generator.h"

struct TrainState {
  int world_size = 1;
  int batch_size = 64;
  int64_t seed = 42;
  int epoch = 1;              // epoch to continue in (1-based)
  int64_t batch = 0;          // next batch index inside that epoch
  int64_t step = 0;           // optimizer steps taken so far (all epochs)
  bool momentum_started = false;
  // 1: one buffer every rank shares (rank 0's); world_size: every rank's own (--use-adasum).
  int momentum_buffers = 1;
  std::vector<float> params;    // n
  std::vector<float> momentum;  // momentum_buffers x n: rank r's buffer at [r*n, (r+1)*n)
  TorchGenerator generator{};  // src/torch_streams.h: the state after the last step taken
};

// Bytes of a version 3 checkpoint file for state (magic "BSGDCKPT", version, fields, the number
// of momentum buffers, floats, the 624 generator words and their index, CRC-32). Throws
// std::invalid_argument when momentum does not hold momentum_buffers x params.size() floats.
std::string encode_checkpoint(const TrainState& s);
// Parses and verifies bytes (version 3, or 2: one momentum buffer); throws
// std::runtime_error("<what is wrong>") on any defect, also a buffer count other than 1 or the
// world size.
TrainState decode_checkpoint(const std::string& bytes, size_t expect_params);

// Writes DIR/ckpt-<step>.bin atomically and keeps the newest `keep` files; returns the path.
// Throws std::runtime_error naming the path and the OS error (unwritable dir, disk full).
std::string save_checkpoint(const std::string& dir, const TrainState& s, int keep = 3);

// The newest valid checkpoint in dir. Corrupt/truncated ones are named on `warn` (one line each)
// and skipped. Returns false when dir holds none.
bool load_newest_checkpoint(const std::string& dir, size_t expect_params, TrainState* out,
                            std::string* path, std::vector<std::string>* warnings);

// Removes dir/.ckpt-*.bin.tmp files a killed writer left behind; returns their paths.
std::vector<std::string> remove_stale_temp_files(const std::string& dir);

// Creates dir (and parents) if needed and checks it is a writable directory; throws naming it.
void prepare_checkpoint_dir(const std::string& dir);
