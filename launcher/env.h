// env: environments as "NAME=value" lists — reading ours, setting, finding and dropping
// variables — and which variables ./launch replaces or keeps at home.
#pragma once
#include <string>
#include <vector>

// The current process's environment as "K=V" strings.
std::vector<std::string> current_environment();
// Sets (replaces) NAME in env.
void env_set(std::vector<std::string>* env, const std::string& name, const std::string& value);
// Value of NAME in env, or nullptr.
const std::string* env_find(const std::vector<std::string>& env, const std::string& name, std::string* value);
// Removes every entry whose name satisfies drop(name).
template <class Pred>
void env_remove_if(std::vector<std::string>* env, Pred drop) {
  std::vector<std::string> out;
  for (auto& e : *env) {
    size_t eq = e.find('=');
    if (!drop(eq == std::string::npos ? e : e.substr(0, eq))) out.push_back(e);
  }
  env->swap(out);
}

// The variables ./launch sets per rank or per job (BARESGD_RANK ... BARESGD_JOB_ID), in the order
// it sets them: stale copies from the caller's environment are dropped; any other BARESGD_*
// (BARESGD_TIMING, ...) passes on.
const std::vector<std::string>& launch_rank_env_names();
bool is_launch_rank_env(const std::string& name);

// Environment variable names a launcher does not forward to remote ranks (host- or
// session-specific: HOSTNAME, PWD, SSH_*, DISPLAY, ...). BARESGD_* are always replaced.
bool is_host_specific_env(const std::string& name);
