// restart: the pure parts of --max-restarts (launcher/job.cc runs the attempts) — the rank command
// of a restarted job (--resume added when it has --checkpoint-dir), the backoff before attempt k,
// where the restarted job resumes from, and the one-line messages.
#pragma once
#include <string>
#include <vector>

// The value of --checkpoint-dir DIR / --checkpoint-dir=DIR in a rank command (the last one), or "".
std::string checkpoint_dir_of(const std::vector<std::string>& command);

// The command a restarted job runs: with a --checkpoint-dir and no --resume, --resume appended;
// else unchanged (a job without checkpoints restarts from scratch).
std::vector<std::string> resume_command(const std::vector<std::string>& command);

// Seconds to wait before restart number k (1-based): 1, 2, 4, ... at most 30.
double restart_backoff_s(int k);

// "ckpt-<run id>-<digits>.bin" (or an older baresgd's "ckpt-<digits>.bin") -> its step; false for
// any other name (src/checkpoint_names.h).
bool checkpoint_step_of_name(const std::string& name, long long* step);

// The newest checkpoint in dir by name (the file written last, of the highest step when several
// share a time): 1 with its name and step, 0 when dir holds none, -1 when dir cannot be read.
int newest_checkpoint(const std::string& dir, std::string* name, long long* step);

// Where the restarted job starts: "resuming from step S (DIR/ckpt-....bin)" when readable_here (the
// dir is on this host, where rank 0 runs) and it holds a checkpoint (by name: the file written
// last, of the highest step when several share a time; the trainer skips a corrupt one and takes
// the one before, and continues only a checkpoint of its own configuration); "starting from the beginning (no checkpoint yet in DIR)"
// when it holds none; "resuming from the newest checkpoint in DIR" when it cannot be read here;
// "starting from scratch (no --checkpoint-dir)" when dir is "".
std::string resume_point(const std::string& dir, bool readable_here);

// "launch: restart 1 of 3 in 1 s after <cause>; <point>".
std::string restart_line(int k, int max_restarts, double backoff_s, const std::string& cause, const std::string& point);
// "launch: <cause>; 3 restarts used (--max-restarts 3), the job fails".
std::string restarts_exhausted_line(int max_restarts, const std::string& cause);
// The --dry-run line: "restarts: up to N (--max-restarts), ..." (empty for 0).
std::string restart_policy_line(int max_restarts, const std::vector<std::string>& command);
