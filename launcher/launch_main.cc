// launch_main: ./launch's main() — `launch --agent` runs the remote agent, `launch --kill-job ID`
// kills a job's processes on this host (both run by ./launch over ssh), anything else a job.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/agent.h"
#include "launcher/job.h"
#include "launcher/job_kill.h"
#include "launcher/options.h"
#include "src/version_text.h"

int main(int argc, char** argv) {
  // With stdin/stdout/stderr closed, our pipes could land on fds 0-2 and get mixed up: fill them.
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  if (argc == 2 && std::strcmp(argv[1], "--agent") == 0) return agent_main();
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::fputs(version_text("launch").c_str(), stdout);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--kill-job") == 0) return kill_job_main(argv[2]);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {  // -v/--version/-cb/--check-build anywhere among the flags, as horovodrun's
    if (parse_launch_options(args).version) {
      std::fputs(version_text("launch").c_str(), stdout);
      return 0;
    }
  } catch (const UsageError&) {
    // run_launch parses again and reports it
  }
  return run_launch(args);
}
