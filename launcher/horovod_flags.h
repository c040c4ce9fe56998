// horovod_flags: every horovodrun flag (Horovod's horovod/runner/launch.py parse_args), what
// ./launch does with it, and its HOROVOD_* variable. One table, read by the
// flag parser (options.cc), --config-file (horovod_config.h), --help and the README test.
#pragma once
#include <functional>
#include <string>
#include <vector>

enum class FlagStatus {
  kImplemented,  // does what horovodrun's flag does
  kNoOp,         // accepted: horovodrun's meaning is already how baresgd behaves
  kRefused,      // refused with `reason` (GPU-only, autotune-only, elastic-only, ...)
};

struct HorovodFlag {
  std::vector<std::string> names;  // the first is the long name; the rest are aliases
  int values;                      // words the flag takes: 0, 1 or 2 (--blacklist-cooldown-range)
  FlagStatus status;
  std::string meaning;  // kImplemented/kNoOp: what ./launch does; kRefused: why it does not apply
  std::string env;      // the HOROVOD_* variable horovodrun sets for it ("" = none)
  std::string env_off;  // kRefused: the value of `env` that means "off" and is accepted ("" = none)
};

// The table, in horovodrun's --help order.
const std::vector<HorovodFlag>& horovod_flags();
// The row naming `flag` (any of its names), or nullptr.
const HorovodFlag* find_horovod_flag(const std::string& flag);
// "implemented", "no-op" or "refused".
const char* flag_status_name(FlagStatus s);
// The one-line refusal for a refused flag: "--autotune: autotune-only: ...".
std::string refusal_line(const HorovodFlag& f, const std::string& as_given);

// Looks a variable up (getenv, or a map in tests); nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;
const char* process_env(const char* name);

// Refused rows whose variable is set (to anything but its env_off value), one warning line each
// (without "launch: "), e.g. "warning: HOROVOD_FUSION_THRESHOLD=67108864 is ignored (horovodrun's
// --fusion-threshold-mb): ./train sums ...". A refused flag is an error, but its variable is a
// site's environment (a module may set it for every job, as horovodrun accepts it): ./launch goes
// on without it and says so. A variable shared by several rows is named once.
std::vector<std::string> ignored_env_warnings(const EnvLookup& env);

// --help's section: one line per horovodrun flag that is a no-op or refused, with why.
std::string horovod_flags_help();

// horovodrun's log levels (--log-level, HOROVOD_LOG_LEVEL), matched case-insensitively; returns
// the upper-case name or "".
std::string horovod_log_level(const std::string& v);
