// restart: restarted commands, backoff and messages for --max-restarts (see restart.h).
#include "launcher/restart.h"
#include "launcher/options.h"
#include "src/checkpoint_names.h"
#include "src/shown_text.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>

namespace {

const char kDirFlag[] = "--checkpoint-dir";

std::string restarts_text(int n) { return std::to_string(n) + (n == 1 ? " restart" : " restarts"); }

}  // namespace

std::string checkpoint_dir_of(const std::vector<std::string>& command) {
  std::string dir;
  const std::string eq = std::string(kDirFlag) + "=";
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] == kDirFlag && i + 1 < command.size())
      dir = command[++i];
    else if (command[i].compare(0, eq.size(), eq) == 0)
      dir = command[i].substr(eq.size());
  }
  return dir;
}

std::vector<std::string> resume_command(const std::vector<std::string>& command) {
  if (checkpoint_dir_of(command).empty()) return command;
  for (size_t i = 1; i < command.size(); ++i)
    if (command[i] == "--resume") return command;
  std::vector<std::string> out = command;
  out.push_back("--resume");
  return out;
}

double restart_backoff_s(int k) {
  double s = 1;
  for (int i = 1; i < k && s < 30; ++i) s *= 2;
  return s < 30 ? s : 30;
}

bool checkpoint_step_of_name(const std::string& name, long long* step) {
  std::string run;
  return parse_checkpoint_name(name, &run, step);
}

int newest_checkpoint(const std::string& dir, std::string* name, long long* step) {
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  // The job's own newest file: the one written last (other runs may share dir), then the highest step.
  long long newest = -1;
  struct timespec newest_time = {0, 0};
  while (dirent* e = readdir(d)) {
    long long s;
    struct stat st;
    if (!checkpoint_step_of_name(e->d_name, &s) || ::stat((dir + "/" + e->d_name).c_str(), &st) != 0) continue;
    const struct timespec t = st.st_mtim;
    const bool later = t.tv_sec != newest_time.tv_sec     ? t.tv_sec > newest_time.tv_sec
                       : t.tv_nsec != newest_time.tv_nsec ? t.tv_nsec > newest_time.tv_nsec
                                                          : s > newest;
    if (newest < 0 || later) newest = s, newest_time = t, *name = e->d_name;
  }
  closedir(d);
  if (newest < 0) return 0;
  *step = newest;
  return 1;
}

std::string resume_point(const std::string& dir, bool readable_here) {
  if (dir.empty()) return "starting from scratch (no --checkpoint-dir)";
  std::string name;
  long long step = 0;
  const int found = readable_here ? newest_checkpoint(dir, &name, &step) : -1;
  if (found < 0) return "resuming from the newest checkpoint in " + shown_text(dir);
  if (found == 0) return "starting from the beginning (no checkpoint yet in " + shown_text(dir) + ")";
  return "resuming from step " + std::to_string(step) + " (" + shown_text(dir + "/" + name) + ")";
}

std::string restart_line(int k, int max_restarts, double backoff_s, const std::string& cause,
                         const std::string& point) {
  return "launch: restart " + std::to_string(k) + " of " + std::to_string(max_restarts) + " in " +
         seconds_text(backoff_s) + " s after " + cause + "; " + point;
}

std::string restarts_exhausted_line(int max_restarts, const std::string& cause) {
  return "launch: " + cause + "; " + restarts_text(max_restarts) + " used (--max-restarts " +
         std::to_string(max_restarts) + "), the job fails";
}

std::string restart_policy_line(int max_restarts, const std::vector<std::string>& command) {
  if (max_restarts <= 0) return "";
  std::string dir = checkpoint_dir_of(command);
  return "restarts: up to " + std::to_string(max_restarts) + " after a job failure (--max-restarts), waiting 1 s, " +
         "doubling, at most 30 s; " +
         (dir.empty() ? std::string("no --checkpoint-dir: each restart starts from scratch")
                      : "restarted ranks run with --resume (checkpoints in " + shown_text(dir) + ")") +
         "\n";
}
