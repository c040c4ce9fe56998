// test_stop_signals_slurm: docs/deploy.md's sbatch recipes for SIGTERM/SIGUSR1 (issue 25, case 4)
// on the suite's one-machine Slurm (tests/slurm_cluster.sh): a job that reaches its time limit
// gets SIGUSR1 from `--signal=B:USR1@N`, the script passes it to ./launch (or srun), the ranks save
// the step they agree on and exit 138, the script requeues the job, and the requeued run
// (--resume) ends with the parameters of an uninterrupted run, bit for bit.
//
// The recipe runs as the page shows it, from a directory holding ./launch, ./data and a ./train
// wrapper (the real ./train with a small MNIST subset, a long --comm-timeout and, on the first
// run only, BARESGD_TEST_STOP_AT: rank 1 stops itself before step 13, so the signal reaches a
// run that is known to be mid-epoch). The test makes Slurm's own machinery act, and waits for
// states (a stopped rank, a pending signal, a job state), never a fixed time:
//   1. the job runs with --time=10 --signal=B:USR1@300; rank 1 stops before step 13;
//   2. `scontrol update JobId=J TimeLimit=4`: now within 300 s of its end, so Slurm's periodic
//      time-limit check (about every 30 s) sends SIGUSR1 to the batch script, whose trap sends it
//      to ./launch, which forwards it to the ranks (rank 1 has it pending);
//   3. rank 1 continues; the ranks stop at step 13, rank 0 saves it, all exit 138; the script runs
//      `scontrol requeue`;
//   4. the requeued job waits for Slurm's requeue delay (BeginTime about two minutes on): the test
//      sets StartTime=now and TimeLimit=10 back, and the job runs again with --resume to the end.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/fault_harness.h"
#include "tests/slurm_cluster_fixture.h"
#include "tests/test_util.h"

namespace {

using testutil::read_file;
using testutil::RunResult;

// The two recipes: ./launch in the batch script (the ranks are job steps, reached through their
// agents), or srun (the tasks, reached through srun's own forwarding).
struct Recipe {
  const char* name;
  const char* command;  // what the recipe's script runs, as docs/deploy.md shows it
  bool launch;
};
const Recipe kRecipes[] = {
    {"Launch", "./launch --gloo --stop-grace 100 ./train --epochs 10 --checkpoint-dir ck --resume &", true},
    {"Srun", "srun ./train --epochs 10 --checkpoint-dir ck --resume &", false},
};

class StopSignalsSlurm : public SlurmClusterFixture, public ::testing::WithParamInterface<Recipe> {};

// The first ```sh block of docs/deploy.md that is a job script holding `needle` (on a line of its own).
std::string deploy_job_script(const std::string& needle) {
  const std::string page = read_file(SlurmClusterFixture::src_dir() + "/docs/deploy.md");
  for (size_t open = page.find("```sh\n"); open != std::string::npos; open = page.find("```sh\n", open)) {
    open += 6;
    const size_t close = page.find("```", open);
    if (close == std::string::npos) return "";
    const std::string block = page.substr(open, close - open);
    if (block.rfind("#!/bin/bash\n#SBATCH", 0) == 0 && block.find("\n" + needle + "\n") != std::string::npos)
      return block;
  }
  return "";
}

std::string trimmed(const std::string& s) {
  const size_t e = s.find_last_not_of(" \n");
  return e == std::string::npos ? "" : s.substr(0, e + 1);
}

// The job's state as scontrol shows it ("RUNNING", "PENDING", "COMPLETED", ...).
std::string job_state(const std::string& job) {
  RunResult r = SlurmClusterFixture::slurm("scontrol show job " + job + " | grep -o 'JobState=[A-Z_]*'", 30);
  const std::string s = trimmed(r.out);
  return s.rfind("JobState=", 0) == 0 ? s.substr(9) : "";
}

// Waits (timeout_s at most) until the job's state is `state`; true then.
bool wait_job_state(const std::string& job, const std::string& state, double timeout_s) {
  for (auto t0 = faultharness::Clock::now(); faultharness::secs_since(t0) < timeout_s;) {
    if (job_state(job) == state) return true;
    ::usleep(200 * 1000);
  }
  return job_state(job) == state;
}

bool has_pending(pid_t pid, int sig) {
  const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
  for (const char* field : {"ShdPnd:", "SigPnd:"}) {
    const size_t at = status.find(field);
    if (at == std::string::npos) continue;
    if (std::strtoull(status.c_str() + at + std::strlen(field), nullptr, 16) & (1ULL << (sig - 1))) return true;
  }
  return false;
}

// 1280 training samples: 10 steps an epoch on 2 ranks; the recipe's --epochs 10 is 100 steps.
constexpr int kPauseStep = 13;
constexpr int kStopStep = 16;  // the next stop vote (every 8 steps): epoch 2, batch 6

// The one process of the job's ranks (argv holding marker) that is stopped, or -1.
pid_t stopped_rank(const std::string& marker) {
  for (pid_t p : faultharness::procs_with(marker))
    if (faultharness::proc_state(p) == 'T') return p;
  return -1;
}

TEST_P(StopSignalsSlurm, RecipeRequeuesAtTheTimeLimitAndEndsBitIdentical) {
  const Recipe& recipe = GetParam();
  const std::string script = deploy_job_script(recipe.command);
  ASSERT_NE(script.find("#SBATCH --signal=B:USR1@"), std::string::npos)
      << "docs/deploy.md has no job script running `" << recipe.command << "` with --signal=B:USR1@N";
  ASSERT_NE(script.find("#SBATCH --requeue"), std::string::npos) << script;
  ASSERT_NE(script.find("trap 'kill -USR1 \"$pid\"' USR1"), std::string::npos) << script;
  ASSERT_NE(script.find("scontrol requeue"), std::string::npos) << script;

  const std::string d = testutil::make_temp_dir("slurm_requeue");
  faultharness::write_mnist_subset(d + "/data", 1280, 256);
  testutil::write_file(d + "/job.sh", script);
  const std::string train = faultharness::abs_path(testutil::train_bin());
  testutil::write_file(d + "/train",
                       "#!/bin/bash\n"
                       "[ \"${SLURM_RESTART_COUNT:-0}\" = 0 ] && export BARESGD_TEST_STOP_AT=1:" +
                           std::to_string(kPauseStep) + "\nexec " + train + " --data-dir " + d +
                           "/data --threads 1 --log-interval 1 --comm-timeout 900 --dump-params " + d +
                           "/final.bin \"$@\"\n");
  ::chmod((d + "/train").c_str(), 0755);
  testutil::run("ln -s " + faultharness::abs_path(testutil::launch_bin()) + " " + d + "/launch");

  // The uninterrupted run, for the bits.
  RunResult base = testutil::run(testutil::launch_bin() + " -np 2 --gloo " + train + " --data-dir " + d +
                                     "/data --threads 1 --epochs 10 --dump-params " + d + "/base.bin",
                                 600);
  ASSERT_EQ(base.status, 0) << base.out << base.err;

  RunResult sub =
      slurm("cd " + d + " && sbatch --parsable -n 2 --time=10 --signal=B:USR1@300 -o " + d + "/out.txt job.sh");
  ASSERT_EQ(sub.status, 0) << sub.out << sub.err;
  const std::string job = trimmed(sub.out.substr(0, sub.out.find_first_of("\n;")));

  // 1. Rank 1 stopped itself before step 13.
  pid_t rank1 = -1;
  for (auto t0 = faultharness::Clock::now(); rank1 < 0 && faultharness::secs_since(t0) < 300;) {
    rank1 = stopped_rank(d + "/data");
    ::usleep(50 * 1000);
  }
  ASSERT_GT(rank1, 0) << "rank 1 never paused: " << read_file(d + "/out.txt");

  // 2. Within 300 s of the end now: Slurm signals the script, which passes it on to the ranks.
  RunResult limit = slurm("scontrol update JobId=" + job + " TimeLimit=4");
  ASSERT_EQ(limit.status, 0) << limit.err;
  for (auto t0 = faultharness::Clock::now(); !has_pending(rank1, SIGUSR1) && faultharness::secs_since(t0) < 180;)
    ::usleep(100 * 1000);
  ASSERT_TRUE(has_pending(rank1, SIGUSR1)) << "no SIGUSR1 reached rank 1:\n" << read_file(d + "/out.txt");

  // 3. The ranks save step 13 and the script requeues the job.
  ASSERT_EQ(::kill(rank1, SIGCONT), 0);
  ASSERT_TRUE(wait_job_state(job, "PENDING", 180)) << job_state(job) << "\n" << read_file(d + "/out.txt");
  const auto ckpts = faultharness::checkpoints_in(d + "/ck");
  ASSERT_FALSE(ckpts.empty()) << read_file(d + "/out.txt");
  EXPECT_EQ(ckpts.rbegin()->first, kStopStep) << read_file(d + "/out.txt");

  // 4. Past the requeue delay, with the time limit back: the run continues to its end. Slurm
  // revokes the old run's credential at the requeue and refuses a launch whose credential is from
  // the same second ("Killing non-startable batch JobId=1: Job credential revoked": the job then
  // fails). A real requeue waits two minutes; this test starts the job at once, so it first waits
  // for the clock to pass the second in which it saw the job pending.
  const time_t pending_seen = ::time(nullptr);
  while (::time(nullptr) <= pending_seen) ::usleep(20 * 1000);
  RunResult again = slurm("scontrol update JobId=" + job + " StartTime=now TimeLimit=10");
  ASSERT_EQ(again.status, 0) << again.err;
  ASSERT_TRUE(wait_job_state(job, "COMPLETED", 600)) << job_state(job) << "\n" << read_file(d + "/out.txt");

  const std::string log = read_file(d + "/out.txt");
  if (recipe.launch) {
    EXPECT_TRUE(faultharness::contains(log, "launch: received SIGUSR1; forwarding it to every rank")) << log;
    EXPECT_TRUE(faultharness::contains(log, "launch: every rank stopped on SIGUSR1 (exit 138)")) << log;
  }
  EXPECT_EQ(faultharness::count_of(log, "train: stopped by SIGUSR1"), 1) << log;
  EXPECT_TRUE(faultharness::contains(log, "after step " + std::to_string(kStopStep) + " (epoch 2, batch 6): saved "))
      << log;
  EXPECT_TRUE(faultharness::contains(log, "resuming from ")) << log;
  const std::string final_params = read_file(d + "/final.bin");
  ASSERT_EQ(final_params.size(), 21840u * 4) << log;
  EXPECT_TRUE(final_params == read_file(d + "/base.bin"))
      << "the requeued run's parameters differ from the uninterrupted run's";
}

INSTANTIATE_TEST_SUITE_P(Recipes, StopSignalsSlurm, ::testing::ValuesIn(kRecipes),
                         [](const ::testing::TestParamInfo<Recipe>& i) { return std::string(i.param.name); });

}  // namespace
