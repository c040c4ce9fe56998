// job_kill: `launch --kill-job ID`, SIGKILL to every process of a job on this host (see job_kill.h).
#include "launcher/job_kill.h"

#include <unistd.h>

#include <csignal>
#include <vector>

#include "launcher/fdio.h"
#include "launcher/proctree.h"

bool valid_job_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

int kill_job_main(const std::string& job_id, int wait_ms) {
  if (!valid_job_id(job_id)) {
    write_all(2, "launch --kill-job: '" + job_id.substr(0, 80) + "' is not a job id (1-64 lowercase hex digits)\n");
    return 2;
  }
  const std::string entry = "BARESGD_JOB_ID=" + job_id;
  std::vector<pid_t> left;
  for (int waited = 0;; waited += 20) {
    left = processes_with_env(entry);  // never ourselves
    if (left.empty()) return 0;
    if (waited >= wait_ms) break;
    for (pid_t p : left) kill(p, SIGKILL);
    usleep(20 * 1000);
  }
  write_all(2, "launch --kill-job: " + std::to_string(left.size()) + " process(es) of job " + job_id +
                   " still alive after " + std::to_string(wait_ms / 1000.0).substr(0, 4) + " s\n");
  return 1;
}
