// proctree: descendants through /proc ppid chains, and stopping them (see proctree.h).
#include "launcher/proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

namespace {

struct ProcStat {
  pid_t pid, ppid;
  char state;
};

bool read_stat(pid_t pid, ProcStat* st) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* rp = strrchr(buf, ')');  // "pid (comm) state ppid ..."; comm may hold ')' and spaces
  long ppid = 0;
  if (!rp || sscanf(rp + 1, " %c %ld", &st->state, &ppid) != 2) return false;
  st->pid = pid;
  st->ppid = static_cast<pid_t>(ppid);
  return true;
}

bool live(const ProcStat& s) { return s.state != 'Z' && s.state != 'X'; }

// Children lists of every process (zombies included: their children are still ours to find).
std::multimap<pid_t, pid_t> children_map() {
  std::multimap<pid_t, pid_t> kids;
  for (pid_t p : all_pids()) {
    ProcStat s;
    if (read_stat(p, &s)) kids.insert({s.ppid, p});
  }
  return kids;
}

}  // namespace

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

bool is_live_process(pid_t pid) {
  ProcStat s;
  return read_stat(pid, &s) && live(s);
}

namespace {

void collect(const std::multimap<pid_t, pid_t>& kids, pid_t root, const std::set<pid_t>& keep,
             std::vector<pid_t>* out) {
  std::vector<pid_t> todo = {root};
  std::set<pid_t> seen = {root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto range = kids.equal_range(p);
    for (auto it = range.first; it != range.second; ++it) {
      pid_t c = it->second;
      if (keep.count(c) || !seen.insert(c).second) continue;
      ProcStat s;
      if (read_stat(c, &s) && live(s)) out->push_back(c);
      todo.push_back(c);
    }
  }
}

}  // namespace

std::vector<pid_t> descendants_of(pid_t root) {
  std::vector<pid_t> out;
  collect(children_map(), root, {}, &out);
  return out;
}

std::vector<pid_t> processes_with_env(const std::string& entry) {
  std::vector<pid_t> out;
  pid_t me = getpid();
  for (pid_t p : all_pids()) {
    if (p == me) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(p));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // not ours (EACCES) or gone
    std::string env;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 && env.size() < (1u << 22)) env.append(buf, static_cast<size_t>(n));
    close(fd);
    size_t pos = 0;
    while (pos < env.size()) {
      size_t nul = env.find('\0', pos);
      if (nul == std::string::npos) nul = env.size();
      if (env.compare(pos, nul - pos, entry) == 0) {
        ProcStat s;
        if (read_stat(p, &s) && live(s)) out.push_back(p);
        break;
      }
      pos = nul + 1;
    }
  }
  return out;
}

int signal_descendants(pid_t root, int sig, const std::set<pid_t>& keep) {
  std::vector<pid_t> pids;
  collect(children_map(), root, keep, &pids);
  for (pid_t p : pids) kill(p, sig);
  return static_cast<int>(pids.size());
}

int stop_descendants(pid_t root, int grace_ms, const std::set<pid_t>& keep, bool reap) {
  auto reap_ours = [&] {
    if (!reap) return;
    while (waitpid(-1, nullptr, WNOHANG) > 0) {}
  };
  if (signal_descendants(root, SIGTERM, keep) == 0) return 0;
  for (int waited = 0; waited < grace_ms; waited += 20) {
    reap_ours();
    std::vector<pid_t> left;
    collect(children_map(), root, keep, &left);
    if (left.empty()) return 0;
    usleep(20 * 1000);
  }
  signal_descendants(root, SIGKILL, keep);
  for (int waited = 0; waited < 1000; waited += 20) {
    reap_ours();
    std::vector<pid_t> left;
    collect(children_map(), root, keep, &left);
    if (left.empty()) return 0;
    usleep(20 * 1000);
  }
  std::vector<pid_t> left;
  collect(children_map(), root, keep, &left);
  return static_cast<int>(left.size());
}
