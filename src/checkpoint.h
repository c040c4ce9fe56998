// checkpoint: the training state saved by rank 0 (parameters, momentum, epoch/batch position,
// step, and torch's default generator, which every rank holds alike: the dropout masks and
// DataLoader seeds still to come are drawn from it), written atomically (temp file, fsync,
// rename, fsync dir) with a magic, version and CRC-32 checksum. Version 4 adds the run's
// configuration block (src/run_config.h: its run id and every setting that determines the
// numbers), and files are named by run (src/checkpoint_names.h). Since version 3 a file holds
// either one momentum buffer every rank shares or, for --use-adasum on W > 1 ranks, each rank's
// own buffer (W of them, rank order); version 3 and 2 files (one buffer) still load, their run
// unknown; version 1 files (no generator) are refused by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/torch_generator.h"
#include "src/run_config.h"

struct TrainState {
  int world_size = 1;
  int batch_size = 64;
  int64_t seed = 42;
  int epoch = 1;      // epoch to continue in (1-based)
  int64_t batch = 0;  // next batch index inside that epoch (counted from epoch_first_sample)
  // The epoch's sample at which this world size took it over (run_config.h; 0 unless continued at
  // another world size): batch b starts at sample epoch_first_sample + b * batch_size * world_size.
  int64_t epoch_first_sample = 0;
  int64_t step = 0;  // optimizer steps taken so far (all epochs)
  bool momentum_started = false;
  // 1: one buffer every rank shares (rank 0's); world_size: every rank's own (--use-adasum).
  int momentum_buffers = 1;
  std::vector<float> params;    // n
  std::vector<float> momentum;  // momentum_buffers x n: rank r's buffer at [r*n, (r+1)*n)
  TorchGenerator generator{};   // src/torch_streams.h: the state after the last step taken
  std::string run_id;           // the run that wrote it (is_run_id); empty: a version 2 or 3 file
  int version = 4;              // the format it was read from (decode_checkpoint)
  bool has_settings = false;    // version 4: `settings` are the run's; false: unknown
  RunSettings settings;
};

// The configuration a checkpoint records (settings meaningful only with has_settings).
RunConfig run_config_of(const TrainState& s);

// Bytes of a version 4 checkpoint file for state (magic "BSGDCKPT", version, fields, the number
// of momentum buffers, the configuration block's length and text, floats, the 624 generator
// words and their index, CRC-32). Throws std::invalid_argument when momentum does not hold
// momentum_buffers x params.size() floats or run_id is not a run id (settings are written as
// they are, has_settings or not).
std::string encode_checkpoint(const TrainState& s);
// Parses and verifies bytes (version 4; 3; or 2: one momentum buffer); throws
// std::runtime_error("<what is wrong>") on any defect, also a buffer count other than 1 or the
// world size, a configuration block that does not parse ("config block: ...") or disagrees with
// the header.
TrainState decode_checkpoint(const std::string& bytes, size_t expect_params);

// Writes DIR/ckpt-<run id>-<step>.bin atomically and keeps the newest `keep` files of that run
// (other runs' files and older baresgd's ckpt-<step>.bin are never touched); returns the path.
// Throws std::runtime_error naming the path and the OS error (unwritable dir, disk full).
std::string save_checkpoint(const std::string& dir, const TrainState& s, int keep = 3);

// The newest valid checkpoint in dir (highest step, of any run). Corrupt/truncated ones are
// named on `warn` (one line each) and skipped. Returns false when dir holds none.
bool load_newest_checkpoint(const std::string& dir, size_t expect_params, TrainState* out, std::string* path,
                            std::vector<std::string>* warnings);

// What --resume can continue from in a directory, newest (highest step) first: the newest valid
// checkpoint whose configuration matches `now` (no change but kHarmless ones), and the newest
// valid one of another configuration newer than it (or the newest of all when none matches).
// Corrupt ones are named in warnings and skipped.
struct ResumeCandidates {
  bool have_match = false, have_other = false;
  TrainState match, other;
  std::string match_path, other_path;
};
ResumeCandidates find_resume_candidates(const std::string& dir, size_t expect_params, const RunConfig& now,
                                        std::vector<std::string>* warnings);

// Removes the temp files (.ckpt-*.bin.tmp) killed writers left in dir; returns their paths. A
// temp file a live writer (another run in the same directory) holds is left alone: writers
// hold an flock on it until it is renamed.
std::vector<std::string> remove_stale_temp_files(const std::string& dir);

// Creates dir (and parents) if needed and checks it is a writable directory; throws naming it.
void prepare_checkpoint_dir(const std::string& dir);
