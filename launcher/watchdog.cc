// watchdog: the process that cleans up ranks' process groups when the launcher dies (see watchdog.h).
#include "launcher/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "launcher/proctree.h"

namespace {

// Whether the group still has a member that is not a zombie. Once the launcher is gone, killed
// ranks' children are reaped by init, which may take its time; zombies are harmless, so they do not
// keep the watchdog waiting. Falls back to kill(-pgid, 0) without /proc.
bool group_alive(pid_t pgid) {
  if (kill(-pgid, 0) != 0 && errno != EPERM) return false;
  DIR* d = opendir("/proc");
  if (!d) return true;
  bool live = false;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
    char* rp = strrchr(buf, ')');
    if (!rp) continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      live = true;
      break;
    }
  }
  closedir(d);
  return live;
}

[[noreturn]] void watchdog_main(int fd, int grace_ms) {
  std::set<pid_t> groups;
  std::string buf, tag;
  char chunk[512];
  while (true) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the launcher is gone (or done)
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string cmd = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (cmd.size() < 2) continue;
      if (cmd[0] == '=') {
        tag = cmd.substr(1);
        continue;
      }
      pid_t pg = static_cast<pid_t>(std::strtol(cmd.c_str() + 1, nullptr, 10));
      if (pg <= 1) continue;
      if (cmd[0] == '+')
        groups.insert(pg);
      else if (cmd[0] == '-')
        groups.erase(pg);
    }
  }
  if (groups.empty()) _exit(0);
  for (pid_t pg : groups) kill(-pg, SIGTERM);
  if (!tag.empty())
    for (pid_t p : processes_with_env(tag)) kill(p, SIGTERM);
  for (int waited = 0; waited < grace_ms; waited += 50) {
    bool any = !tag.empty() && !processes_with_env(tag).empty();
    for (pid_t pg : groups) any = any || group_alive(pg);
    if (!any) _exit(0);
    usleep(50 * 1000);
  }
  for (pid_t pg : groups) kill(-pg, SIGKILL);
  if (!tag.empty())
    for (pid_t p : processes_with_env(tag)) kill(p, SIGKILL);
  _exit(0);
}

}  // namespace

Watchdog::~Watchdog() { stop(); }

void Watchdog::start(int grace_ms) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) {
    // Own session: immune to the terminal's ^C and to kill of the launcher's process group.
    setsid();
    for (int s = 1; s < NSIG; ++s) {
      if (s == SIGKILL || s == SIGSTOP) continue;
      signal(s, SIG_DFL);
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Hold nothing the launcher's readers wait on: stdio to /dev/null, every other fd closed.
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    long maxfd = sysconf(_SC_OPEN_MAX);
    if (maxfd < 0 || maxfd > 65536) maxfd = 65536;
    for (int fd = 3; fd < maxfd; ++fd)
      if (fd != p[0]) close(fd);
    watchdog_main(p[0], grace_ms);
  }
  int e = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(e));
  }
  pid_ = pid;
  fd_ = p[1];
}

void Watchdog::send(char op, pid_t pgid) {
  if (fd_ < 0 || pgid <= 1) return;
  char line[32];
  int n = snprintf(line, sizeof line, "%c%d\n", op, static_cast<int>(pgid));
  ssize_t w;
  do {
    w = write(fd_, line, static_cast<size_t>(n));  // < PIPE_BUF: atomic
  } while (w < 0 && errno == EINTR);
}

void Watchdog::tag(const std::string& entry) {
  if (fd_ < 0 || entry.empty() || entry.size() > 400 || entry.find('\n') != std::string::npos) return;
  std::string line = "=" + entry + "\n";  // < PIPE_BUF: atomic
  ssize_t w;
  do {
    w = write(fd_, line.data(), line.size());
  } while (w < 0 && errno == EINTR);
}

void Watchdog::watch(pid_t pgid) { send('+', pgid); }
void Watchdog::unwatch(pid_t pgid) { send('-', pgid); }

void Watchdog::stop() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) {
    int st;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
    pid_ = -1;
  }
}
