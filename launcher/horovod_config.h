// horovod_config: horovodrun's --config-file (pure). The YAML subset horovodrun's config files
// use — top-level keys holding a scalar (controller) or a map of scalars (params, autotune,
// timeline, stall_check, library_options, logging), '#' comments, plain or quoted scalars — is
// read into entries, and the entries become the ./launch flags they stand for (horovodrun's keys:
// horovod/runner/common/util/config_parser.py). Every error is one line "FILE:LINE: what".
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ConfigEntry {
  std::string key;    // "controller" or "section.name", e.g. "params.fusion_threshold_mb"
  std::string value;  // the scalar, unquoted
  bool quoted = false;
  bool null = false;  // "~", "null" or nothing: horovodrun skips the key
  int line = 0;
};

// Reads `text` (the file's bytes; `file` names it in errors). Throws ConfigError.
std::vector<ConfigEntry> parse_config_text(const std::string& text, const std::string& file);

// What the entries ask for: flags as command-line words (e.g. {"--timeline-filename", "t.json"})
// and the controller ("--gloo", "--mpi" or ""). Keys whose flag is in `given` (set on the command
// line, under any of its names) are skipped, as horovodrun's override_args. Unknown keys, bad
// values and keys whose flag ./launch refuses are ConfigErrors naming FILE:LINE.
struct ConfigFlags {
  std::vector<std::string> args;
  std::string controller;
};
ConfigFlags config_flags(const std::vector<ConfigEntry>& entries, const std::string& file,
                         const std::vector<std::string>& given);
