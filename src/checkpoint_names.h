// checkpoint_names: the names of checkpoint files in --checkpoint-dir (pure): a version 4 run
// writes ckpt-<run id>-<step>.bin (16 hex digits, 12-digit step), so two runs sharing a directory
// never write or prune each other's files; ckpt-<step>.bin is an older baresgd's name (no run id).
// Temp files are the name with a leading '.' and a trailing ".tmp".
#pragma once
#include <string>

// "ckpt-0123456789abcdef-000000000040.bin"
std::string checkpoint_file_name(const std::string& run_id, long long step);
// true for ckpt-<run id>-<digits>.bin (*run_id set) and ckpt-<digits>.bin (*run_id empty), at
// most 18 digits; false for every other name.
bool parse_checkpoint_name(const std::string& name, std::string* run_id, long long* step);
// true for ".<a checkpoint name>.tmp".
bool is_checkpoint_temp_name(const std::string& name);
