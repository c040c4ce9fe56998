// env: "NAME=value" environment lists and ./launch's variable classes (see env.h).
#include "launcher/env.h"

#include <set>

extern char** environ;

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

void env_set(std::vector<std::string>* env, const std::string& name, const std::string& value) {
  std::string prefix = name + "=";
  for (auto& e : *env) {
    if (e.compare(0, prefix.size(), prefix) == 0) {
      e = prefix + value;
      return;
    }
  }
  env->push_back(prefix + value);
}

const std::string* env_find(const std::vector<std::string>& env, const std::string& name, std::string* value) {
  std::string prefix = name + "=";
  for (const auto& e : env) {
    if (e.compare(0, prefix.size(), prefix) == 0) {
      if (value) *value = e.substr(prefix.size());
      return &e;
    }
  }
  return nullptr;
}

const std::vector<std::string>& launch_rank_env_names() {
  static const std::vector<std::string> kNames = {"BARESGD_RANK",       "BARESGD_SIZE",       "BARESGD_LOCAL_RANK",
                                                  "BARESGD_LOCAL_SIZE", "BARESGD_CROSS_RANK", "BARESGD_CROSS_SIZE",
                                                  "BARESGD_COMM",       "BARESGD_HOSTNAME",   "BARESGD_HOST_ADDR",
                                                  "BARESGD_STORE_ADDR", "BARESGD_SECRET",     "BARESGD_JOB_ID"};
  return kNames;
}

bool is_launch_rank_env(const std::string& name) {
  for (const std::string& n : launch_rank_env_names())
    if (name == n) return true;
  return false;
}

bool is_host_specific_env(const std::string& name) {
  static const std::set<std::string> kExact = {"HOSTNAME",  "PWD",        "OLDPWD",  "SHLVL",          "_",
                                               "DISPLAY",   "XAUTHORITY", "TERMCAP", "WINDOWID",       "TMUX",
                                               "TMUX_PANE", "STY",        "PS1",     "PROMPT_COMMAND", "MAIL"};
  if (kExact.count(name)) return true;
  if (name.compare(0, 4, "SSH_") == 0) return true;
  if (name.compare(0, 10, "BASH_FUNC_") == 0) return true;
  if (name.compare(0, 4, "XDG_") == 0) return true;
  return false;
}
