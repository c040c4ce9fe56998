// run_config: the configuration block of a version 4 checkpoint — the run a file belongs to (its
// run id) and every setting that determines the run's numbers — as text, with a pure parser, and
// the comparison --resume makes between a checkpoint's configuration and this run's.
#pragma once
#include <string>
#include <vector>

// The settings a version 4 checkpoint records besides world size, --batch-size and --seed (which
// the checkpoint header holds in every version).
struct RunSettings {
  double lr = 0.01;
  double momentum = 0.5;
  int epochs = 10;      // recorded; a change does not alter any step's numbers
  bool dropout = true;  // not --no-dropout
  bool fp16_allreduce = false;
  double predivide = 1.0;          // --gradient-predivide-factor
  bool adasum = false;             // --use-adasum
  std::string allreduce = "auto";  // --allreduce (the algorithms sum in different orders)
  int threads = 1;                 // compute threads per rank (recorded; changes only rounding)
};

// The whole block: what ./train writes into every version 4 checkpoint.
struct RunConfig {
  std::string run_id;  // 16 lowercase hex digits (is_run_id)
  int world_size = 1;
  int batch_size = 64;
  long long seed = 42;
  RunSettings settings;
  // A position, not a setting (never compared): the sample of its epoch at which this world size
  // began the epoch — 0, unless the epoch was continued at another world size (elastic resume).
  long long epoch_first_sample = 0;
};

constexpr size_t kMaxRunConfigBytes = 4096;

bool is_run_id(const std::string& s);  // 16 lowercase hex digits

// "key value" lines, one per setting, in a fixed order ("run 0123456789abcdef\nworld-size 4\n...").
// Floats are written with the fewest digits that read back to the same double.
std::string format_run_config(const RunConfig& c);
// Parses format_run_config's text: every key exactly once (any order), nothing else, values in
// ./train's ranges. Throws std::runtime_error("config block: <what>", one line, the offending
// text shown with \xNN escapes) on any defect.
RunConfig parse_run_config(const std::string& text);

// One setting that differs between a checkpoint and this run, as a user reads it: `was` and
// `now` are flag phrases ("--lr 0.01", "2 ranks", "--no-dropout", "no --fp16-allreduce").
struct SettingChange {
  enum Kind {
    kNumbers,    // changes the steps' numbers: --resume refuses it without --resume-any-config
    kWorldSize,  // allowed: the epoch continues where it stopped, dealt over the new world size
    kHarmless,   // --epochs, compute threads: said in one line, never refused
  };
  Kind kind;
  std::string was, now;
};
// The differences of `now` from a checkpoint's `was`, in format order. has_settings false (a
// version 2 or 3 file): only world size, --batch-size and --seed are compared.
std::vector<SettingChange> run_config_changes(const RunConfig& was, bool has_settings, const RunConfig& now);
// "--seed 42 --lr 0.01" from the changes' `was` (or `now`) phrases of the given kinds.
std::string changes_text(const std::vector<SettingChange>& changes, bool was, std::vector<SettingChange::Kind> kinds);
