// proctree: finding a process's descendants through /proc (every /proc/<pid>/stat's ppid chain),
// also those that left its process group or session (setsid), and killing them. Used at teardown
// by ./launch (a child subreaper for its local ranks) and by `launch --agent` (a child subreaper
// for its rank): as subreapers, every orphan of a rank's tree is re-parented to them, so the ppid
// chain always leads back. A process that has a job's environment entry ("BARESGD_JOB_ID=...")
// can also be found after its subreaper died (the watchdog's last resort).
#pragma once
#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

// Every live (not zombie) descendant of root, root excluded. Empty without /proc.
std::vector<pid_t> descendants_of(pid_t root);
// Live processes of ours whose /proc/<pid>/environ holds entry exactly ("NAME=value").
std::vector<pid_t> processes_with_env(const std::string& entry);
// Sends sig to every descendant of root except those in keep and their descendants. Returns how
// many were signalled.
int signal_descendants(pid_t root, int sig, const std::set<pid_t>& keep = {});
// SIGTERM to the descendants, SIGKILL after grace_ms to those left, reaping our children
// meanwhile (reap: waitpid(-1) on them; only for a caller that reaps nothing else). Returns the
// number still alive at the end (0 normally).
int stop_descendants(pid_t root, int grace_ms, const std::set<pid_t>& keep, bool reap);
