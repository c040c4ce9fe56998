// srun: srun command lines for ranks started as job steps (see srun.h).
#include "launcher/srun.h"

std::vector<std::string> srun_step_argv(const SrunStep& s, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {s.srun,
                                   "--nodes=1",
                                   "--ntasks=1",
                                   "--ntasks-per-node=1",
                                   "--nodelist=" + s.host,
                                   "--overlap",
                                   "--kill-on-bad-exit=1",
                                   "--unbuffered",
                                   "--quiet",
                                   "--export=ALL",
                                   "--chdir=" + s.cwd,
                                   "--job-name=" + s.name};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string srun_missing_message(const std::string& job_id) {
  return "srun not found in PATH: inside the Slurm allocation " + job_id +
         " the ranks start as job steps through srun (install slurm-client, or pass --no-srun to start them "
         "locally and over ssh)";
}
