// rank_env_checks: rank discovery from a map of variables, for tests/test_comm.cc (our launcher,
// Open MPI, Slurm) and tests/test_torchrun.cc (torchrun).
#pragma once
#include <map>
#include <stdexcept>
#include <string>

#include "comm/comm_internal.h"
#include "comm/communicator.h"

namespace rank_env_checks {

using EnvMap = std::map<std::string, std::string>;

inline RankInfo discover(const EnvMap& env) {
  return discover_rank_info([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// discover()'s error message, or "(no error)".
inline std::string discover_error(const EnvMap& env) {
  try {
    discover(env);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace rank_env_checks
