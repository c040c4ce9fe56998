// test_launch_restarts: ./launch --max-restarts N (--reset-limit N) end to end and its pure parts:
//   - 4 Gloo ranks of ./train with checkpoints; one rank SIGKILLed twice (once a checkpoint exists,
//     then once the restarted job has written a newer one): the launcher restarts the job twice
//     with --resume, prints one restart line each naming the rank, its signal and the step, exits
//     0, and the final parameters equal an uninterrupted run's bit for bit;
//   - a command that always fails: exactly N restarts, then the cause and "N restarts used", its
//     exit status, in bounded time; --max-restarts 0, a clean exit, --timeout and SIGTERM to the
//     launcher never restart;
//   - the flags (launcher/options.h) and launcher/restart.h: --resume added only with
//     --checkpoint-dir, the backoff, the resume point read from a checkpoint dir, --dry-run's line.
//
// Env: BARESGD_TRAIN, BARESGD_LAUNCH (as the rest of the suite); MNIST in data/ (`make data`).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "launcher/restart.h"
#include "tests/fault_harness.h"
#include "tests/launch_usage.h"
#include "tests/marked_job_test.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int restart_lines(const std::string& err) { return count_of(err, "launch: restart "); }

class LaunchRestarts : public MarkedJobTest {
 protected:
  // ./launch -np np --gloo FLAGS... CMD...
  std::vector<std::string> launch(int np, const std::vector<std::string>& flags, const std::vector<std::string>& cmd) {
    return cat(cat({launch_, "-np", std::to_string(np), "--gloo"}, flags), cmd);
  }
  // A shell rank that runs script; the marker rides along as $0.
  std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script, marker_}; }
};

// Waits for the job's 4 ranks, none of them in old; empty after timeout_s.
std::map<int, pid_t> new_ranks(const std::string& marker, const std::map<int, pid_t>& old, double timeout_s) {
  auto t0 = Clock::now();
  while (secs_since(t0) < timeout_s) {
    auto now = rank_pids(marker);
    bool fresh = now.size() == 4;
    for (auto& kv : now)
      for (auto& o : old) fresh = fresh && kv.second != o.second;
    if (fresh) return now;
    ::usleep(5 * 1000);
  }
  return {};
}

// The step in "resuming from step S" of restart line k (1-based), or -1.
long long resumed_step(const std::string& err, int k) {
  std::regex re("launch: restart " + std::to_string(k) +
                " of \\d+ in [0-9.]+ s after [^\\n]*; resuming from step (\\d+) ");
  std::smatch m;
  return std::regex_search(err, m, re) ? std::stoll(m[1]) : -1;
}

TEST_F(LaunchRestarts, TwoKillNinesResumeBitIdenticalToAnUninterruptedRun) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt";
  const long long per_epoch = 64;
  write_mnist_subset(data, 16000, 1000);  // 4 ranks: 64 steps per epoch
  const std::vector<std::string> args = {
      train_, "--batch-size", "64", "--test-batch-size", "1000", "--epochs",           "2", "--log-interval",
      "10",   "--seed",       "42", "--data-dir",        data,   "--checkpoint-every", "4"};
  auto t0 = Clock::now();
  {
    Proc ref(launch(4, {}, cat(args, {"--checkpoint-dir", dir_ + "/refckpt", "--dump-params", dir_ + "/ref.bin"})));
    ASSERT_EQ(ref.code(300), 0) << ref.err();
    std::cerr << "[ timing ] uninterrupted 4-rank run: " << ref.elapsed() << " s\n";
  }
  const std::string want = read_file(dir_ + "/ref.bin");
  ASSERT_EQ(want.size(), 21840u * 4);

  auto t1 = Clock::now();
  Proc job(
      launch(4, {"--max-restarts", "3"}, cat(args, {"--checkpoint-dir", ckpt, "--dump-params", dir_ + "/out.bin"})));
  // Kill 1: rank 2 once a checkpoint past step 4 exists.
  ASSERT_GT(wait_for_checkpoint(job, ckpt, 4, 1, 120), 0) << job.err();
  auto first = rank_pids(marker_);
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(::kill(first[2], SIGKILL), 0);
  ASSERT_GE(job.wait_for(std::regex("launch: restart 1 of 3 "), 60, true, t1), 0) << job.err();
  const long long r1 = resumed_step(job.err(), 1);
  EXPECT_GT(r1, 4) << job.err();
  EXPECT_TRUE(contains(job.err(), "after rank 2 (localhost, pid " + std::to_string(first[2]) +
                                      ") was killed by signal 9 (SIGKILL); resuming from step "))
      << job.err();
  // Kill 2: rank 0 (the checkpoint writer) of the restarted job, once it wrote a checkpoint in
  // epoch 2 (the second restart resumes across the epoch boundary).
  auto second = new_ranks(marker_, first, 60);
  ASSERT_EQ(second.size(), 4u) << job.err();
  ASSERT_GT(wait_for_checkpoint(job, ckpt, std::max(r1, per_epoch), 1, 120), per_epoch) << job.err();
  ASSERT_EQ(::kill(second[0], SIGKILL), 0);
  ASSERT_GE(job.wait_for(std::regex("launch: restart 2 of 3 "), 60, true, t1), 0) << job.err();
  const long long r2 = resumed_step(job.err(), 2);
  EXPECT_GT(r2, per_epoch) << job.err();

  ASSERT_EQ(job.code(300), 0) << job.err();
  const std::string err = job.err();
  std::cerr << "[ timing ] run with two kills and two restarts: " << job.elapsed() << " s (resumed from steps " << r1
            << ", " << r2 << ")\n";
  EXPECT_EQ(restart_lines(err), 2) << err;
  EXPECT_TRUE(contains(err, "after rank 0 (localhost, pid " + std::to_string(second[0]) + ") was killed by signal 9"))
      << err;
  EXPECT_EQ(count_of(err, "train: resuming from " + ckpt + "/ckpt-"), 2) << err;  // both restarts really resumed
  // Both restarts continued the first attempt's run (issue 11): one run id, its newest three files.
  std::set<std::string> runs;
  for (const auto& kv : checkpoints_in(ckpt)) runs.insert(kv.second.substr(ckpt.size() + 6, 16));
  EXPECT_EQ(runs.size(), 1u) << "the restarts wrote checkpoints of more than one run";
  EXPECT_EQ(checkpoints_in(ckpt).size(), 3u);
  EXPECT_TRUE(contains(job.out(), "Train Epoch: 2 ")) << job.out();
  EXPECT_EQ(count_of(job.out(), "[0]<stdout>:Train Epoch: 1 [0/"), 1) << "a restart began again at batch 0:\n"
                                                                      << job.out();
  std::cerr << "[ sample ] restart lines:\n";
  for (const std::string& l : lines_of(err))
    if (contains(l, "launch: restart ")) std::cerr << "[ sample ]   " << l << "\n";
  const std::string got = read_file(dir_ + "/out.bin");
  ASSERT_EQ(got.size(), want.size()) << err;
  EXPECT_TRUE(got == want) << "the restarted run's parameters differ from the uninterrupted run's";
  std::cerr << "[ timing ] restart test total: " << secs_since(t0) << " s\n";
}

TEST_F(LaunchRestarts, AlwaysFailingJobUsesEveryRestartThenFailsWithItsCause) {
  Proc job(launch(2, {"--max-restarts", "2"}, sh("exit 3")));
  ASSERT_EQ(job.code(30), 3) << job.err();
  const std::string err = job.err();
  EXPECT_EQ(restart_lines(err), 2) << err;
  EXPECT_TRUE(contains(err, "launch: restart 1 of 2 in 1 s after rank ")) << err;
  EXPECT_TRUE(contains(err, "launch: restart 2 of 2 in 2 s after rank ")) << err;
  EXPECT_TRUE(contains(err, "exited with status 3; starting from scratch (no --checkpoint-dir)")) << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("launch: rank [01] \\(localhost, pid \\d+\\) exited with status 3; 2 "
                                                "restarts used \\(--max-restarts 2\\), the job fails\\n")))
      << err;
  EXPECT_EQ(count_of(err, "; stopping the job"), 3) << err;  // three attempts
  EXPECT_GE(job.elapsed(), 1.0 + 2.0) << "restarted without the 1 s and 2 s backoffs";
  std::cerr << "[ timing ] 2 restarts used: " << job.elapsed() << " s\n";
}

TEST_F(LaunchRestarts, ResetLimitIsTheSameFlag) {
  Proc job(launch(2, {"--reset-limit=1"}, sh("exit 5")));
  ASSERT_EQ(job.code(30), 5) << job.err();
  EXPECT_EQ(restart_lines(job.err()), 1) << job.err();
  EXPECT_TRUE(contains(job.err(), "1 restart used (--max-restarts 1)")) << job.err();
}

TEST_F(LaunchRestarts, WithoutTheFlagAFailureIsNotRestarted) {
  Proc job(launch(2, {}, sh("exit 3")));
  ASSERT_EQ(job.code(30), 3) << job.err();
  EXPECT_EQ(restart_lines(job.err()), 0) << job.err();
  EXPECT_FALSE(contains(job.err(), "restarts used")) << job.err();
}

TEST_F(LaunchRestarts, CleanExitTimeoutAndSigtermNeverRestart) {
  {
    Proc job(launch(2, {"--max-restarts", "3"}, sh("exit 0")));
    EXPECT_EQ(job.code(30), 0) << job.err();
    EXPECT_EQ(job.err(), "");
  }
  {
    Proc job(launch(2, {"--max-restarts", "3", "--timeout", "1"}, sh("sleep 30")));
    EXPECT_EQ(job.code(30), 124) << job.err();
    EXPECT_EQ(restart_lines(job.err()), 0) << job.err();
  }
  {
    Proc job(launch(2, {"--max-restarts", "3"}, sh("sleep 30")));
    auto t0 = Clock::now();
    while (rank_pids(marker_).size() < 2 && secs_since(t0) < 60) ::usleep(10 * 1000);
    ASSERT_EQ(rank_pids(marker_).size(), 2u);
    ASSERT_EQ(::kill(job.pid(), SIGTERM), 0);
    EXPECT_EQ(job.code(30), 128 + SIGTERM) << job.err();
    EXPECT_EQ(restart_lines(job.err()), 0) << job.err();
  }
  {
    // SIGTERM during the backoff: no restart follows.
    Proc job(launch(2, {"--max-restarts", "3"}, sh("exit 4")));
    ASSERT_GE(job.wait_for(std::regex("launch: restart 1 of 3"), 20, true, Clock::now()), 0) << job.err();
    ASSERT_EQ(::kill(job.pid(), SIGTERM), 0);
    EXPECT_EQ(job.code(30), 128 + SIGTERM) << job.err();
    EXPECT_EQ(restart_lines(job.err()), 1) << job.err();
    EXPECT_TRUE(contains(job.err(), "received SIGTERM before the restart; not restarting")) << job.err();
  }
}

TEST_F(LaunchRestarts, DryRunShowsThePolicy) {
  Proc job(launch(2, {"--max-restarts", "2", "--dry-run"}, {testutil::train_bin(), "--checkpoint-dir", "/tmp/c"}));
  ASSERT_EQ(job.code(30), 0) << job.err();
  EXPECT_TRUE(contains(job.out(),
                       "\nrestarts: up to 2 after a job failure (--max-restarts), waiting 1 s, doubling, at "
                       "most 30 s; restarted ranks run with --resume (checkpoints in /tmp/c)\n"))
      << job.out();
  Proc plain(launch(2, {"--dry-run"}, {testutil::train_bin()}));
  ASSERT_EQ(plain.code(30), 0) << plain.err();
  EXPECT_FALSE(contains(plain.out(), "restarts:")) << plain.out();
}

// ---- over ssh: the test hosts of tests/test_hosts.sh ------------------------------------------

class LaunchRestartsRemote : public TestHostsFixture<LaunchRestarts> {};

// 2 ranks on hpc01, 2 on hpc03 (ssh + agent): rank 3 on hpc03 is SIGKILLed once a checkpoint
// exists; the job restarts once (rank 0 is remote: the line names the dir, not a step), resumes,
// and ends with the uninterrupted run's parameters.
TEST_F(LaunchRestartsRemote, KillNineOfARemoteRankRestartsAndResumesBitIdentical) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt";
  write_mnist_subset(data, 16000, 1000);
  const std::vector<std::string> hosts = {"-H", "hpc01:2,hpc03:2", "-F", cfg()};
  const std::vector<std::string> args = {
      train_, "--batch-size", "64", "--test-batch-size", "1000", "--epochs",           "2", "--log-interval",
      "10",   "--seed",       "42", "--data-dir",        data,   "--checkpoint-every", "4"};
  {
    Proc ref(launch(4, hosts, cat(args, {"--checkpoint-dir", dir_ + "/refckpt", "--dump-params", dir_ + "/ref.bin"})));
    ASSERT_EQ(ref.code(300), 0) << ref.err();
    std::cerr << "[ timing ] uninterrupted run over ssh: " << ref.elapsed() << " s\n";
  }
  const std::string want = read_file(dir_ + "/ref.bin");
  ASSERT_EQ(want.size(), 21840u * 4);
  Proc job(launch(4, cat(hosts, {"--max-restarts", "2"}),
                  cat(args, {"--checkpoint-dir", ckpt, "--dump-params", dir_ + "/out.bin"})));
  ASSERT_GT(wait_for_checkpoint(job, ckpt, 4, 1, 120), 0) << job.err();
  auto first = rank_pids(marker_);  // the test hosts are this machine: their ranks are in /proc
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(::kill(first[3], SIGKILL), 0);
  ASSERT_EQ(job.code(300), 0) << job.err();
  const std::string err = job.err();
  EXPECT_EQ(restart_lines(err), 1) << err;
  EXPECT_TRUE(contains(err, "launch: restart 1 of 2 in 1 s after rank 3 (hpc03, pid " + std::to_string(first[3]) +
                                ") was killed by signal 9 (SIGKILL); resuming from the newest checkpoint in " + ckpt +
                                "\n"))
      << err;
  EXPECT_EQ(count_of(err, "train: resuming from " + ckpt + "/ckpt-"), 1) << err;
  EXPECT_EQ(read_file(dir_ + "/out.bin") == want, true) << "restarted weights differ from the uninterrupted run's";
  std::cerr << "[ timing ] run over ssh with a remote kill and a restart: " << job.elapsed() << " s\n";
}

// The fault suite's case (issue 11): a 3-epoch 4-rank run over the two sshd hosts with
// --max-restarts 3; rank 3 (hpc03) is SIGKILLed once a checkpoint exists, then rank 1 (hpc01) of
// the restarted job once it has checkpointed in epoch 2. The job exits 0 after two restarts that
// both resumed, and its final parameters equal the uninterrupted run's bit for bit.
TEST_F(LaunchRestartsRemote, TwoKillNinesOverTwoHostsInAThreeEpochRunEndBitIdentical) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt";
  const long long per_epoch = 64;
  write_mnist_subset(data, 16000, 1000);  // 4 ranks: 64 steps per epoch
  const std::vector<std::string> hosts = {"-H", "hpc01:2,hpc03:2", "-F", cfg()};
  const std::vector<std::string> args = {
      train_, "--batch-size", "64", "--test-batch-size", "1000", "--epochs",           "3", "--log-interval",
      "10",   "--seed",       "42", "--data-dir",        data,   "--checkpoint-every", "4"};
  {
    Proc ref(launch(4, hosts, cat(args, {"--checkpoint-dir", dir_ + "/refckpt", "--dump-params", dir_ + "/ref.bin"})));
    ASSERT_EQ(ref.code(600), 0) << ref.err();
    std::cerr << "[ timing ] uninterrupted 3-epoch run over ssh: " << ref.elapsed() << " s\n";
  }
  const std::string want = read_file(dir_ + "/ref.bin");
  ASSERT_EQ(want.size(), 21840u * 4);
  auto t1 = Clock::now();
  Proc job(launch(4, cat(hosts, {"--max-restarts", "3"}),
                  cat(args, {"--checkpoint-dir", ckpt, "--dump-params", dir_ + "/out.bin"})));
  ASSERT_GT(wait_for_checkpoint(job, ckpt, 4, 1, 180), 0) << job.err();
  auto first = rank_pids(marker_);
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(::kill(first[3], SIGKILL), 0);
  ASSERT_GE(job.wait_for(std::regex("launch: restart 1 of 3 "), 120, true, t1), 0) << job.err();
  auto second = new_ranks(marker_, first, 120);
  ASSERT_EQ(second.size(), 4u) << job.err();
  ASSERT_GT(wait_for_checkpoint(job, ckpt, per_epoch + 4, 1, 300), per_epoch) << job.err();
  ASSERT_EQ(::kill(second[1], SIGKILL), 0);
  ASSERT_GE(job.wait_for(std::regex("launch: restart 2 of 3 "), 120, true, t1), 0) << job.err();
  ASSERT_EQ(job.code(600), 0) << job.err();
  const std::string err = job.err();
  EXPECT_EQ(restart_lines(err), 2) << err;
  EXPECT_TRUE(
      contains(err, "after rank 3 (hpc03, pid " + std::to_string(first[3]) + ") was killed by signal 9 (SIGKILL)"))
      << err;
  EXPECT_TRUE(
      contains(err, "after rank 1 (hpc01, pid " + std::to_string(second[1]) + ") was killed by signal 9 (SIGKILL)"))
      << err;
  EXPECT_EQ(count_of(err, "train: resuming from " + ckpt + "/ckpt-"), 2) << err;
  EXPECT_TRUE(contains(job.out(), "Train Epoch: 3 ")) << job.out();
  EXPECT_EQ(read_file(dir_ + "/out.bin") == want, true) << "restarted weights differ from the uninterrupted run's";
  std::cerr << "[ timing ] 3-epoch run over ssh with two kills and two restarts: " << job.elapsed() << " s\n";
}

// ---- the flags -----------------------------------------------------------------------------------

TEST(LaunchRestartOptions, ParsesBothNames) {
  EXPECT_EQ(parse_launch_options({"-np", "2", "--gloo", "prog"}).max_restarts, 0);
  EXPECT_EQ(parse_launch_options({"-np", "2", "--gloo", "--max-restarts", "3", "prog"}).max_restarts, 3);
  EXPECT_EQ(parse_launch_options({"-np", "2", "--gloo", "--max-restarts=0", "prog"}).max_restarts, 0);
  EXPECT_EQ(parse_launch_options({"-np", "2", "--gloo", "--reset-limit", "4", "prog"}).max_restarts, 4);
  EXPECT_EQ(parse_launch_options({"-np", "2", "--gloo", "--reset-limit=2", "--max-restarts", "2", "prog"}).max_restarts,
            2);
  // After CMD it is CMD's.
  LaunchOptions o = parse_launch_options({"-np", "2", "--gloo", "prog", "--max-restarts", "3"});
  EXPECT_EQ(o.max_restarts, 0);
  EXPECT_EQ(o.command.size(), 3u);
}

TEST(LaunchRestartOptions, BadValuesAreOneLineErrorsNamingTheFlag) {
  const std::vector<std::string> head = {"-np", "2", "--gloo"};
  bool usage = true;
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "-1", "p"}), &usage), "--max-restarts must be >= 0 (got -1)");
  EXPECT_FALSE(usage);
  EXPECT_EQ(usage_error(cat(head, {"--reset-limit", "-2", "p"})), "--reset-limit must be >= 0 (got -2)");
  usage = true;
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "1.5", "p"}), &usage),
            "--max-restarts '1.5' is not a whole number");
  EXPECT_FALSE(usage);
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "x", "p"})), "--max-restarts 'x' is not a whole number");
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts=", "p"})), "--max-restarts needs a whole number");
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts"})), "--max-restarts needs a value");
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "99999999999", "p"})),
            "--max-restarts '99999999999' is out of range");
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "2000000", "p"})),
            "--max-restarts 2000000 is more restarts than launch supports (1000000)");
  EXPECT_EQ(usage_error(cat(head, {"--max-restarts", "2", "--reset-limit", "3", "p"})),
            "--reset-limit 3 contradicts --max-restarts 2: give one");
  EXPECT_EQ(usage_error(cat(head, {"--reset-limit", "1", "--max-restarts", "0", "p"})),
            "--max-restarts 0 contradicts --reset-limit 1: give one");
  EXPECT_NE(std::string(launch_help_text()).find("--max-restarts N"), std::string::npos);
  EXPECT_NE(std::string(launch_help_text()).find("--reset-limit N"), std::string::npos);
}

TEST(LaunchRestartOptions, BadValueStartsNothing) {
  auto r = testutil::run(testutil::launch_bin() + " -np 2 --gloo --max-restarts -3 /bin/sh -c 'echo started'", 30);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "launch: --max-restarts must be >= 0 (got -3)\n");
  EXPECT_EQ(r.out, "");
}

TEST(LaunchRestartOptions, ResumeIsAddedOnlyWithACheckpointDir) {
  using V = std::vector<std::string>;
  EXPECT_EQ(resume_command(V{"./train", "--epochs", "2"}), (V{"./train", "--epochs", "2"}));
  EXPECT_EQ(resume_command(V{"./train", "--checkpoint-dir", "D"}), (V{"./train", "--checkpoint-dir", "D", "--resume"}));
  EXPECT_EQ(resume_command(V{"./train", "--checkpoint-dir=D"}), (V{"./train", "--checkpoint-dir=D", "--resume"}));
  EXPECT_EQ(resume_command(V{"./train", "--resume", "--checkpoint-dir", "D"}),
            (V{"./train", "--resume", "--checkpoint-dir", "D"}));
  EXPECT_EQ(resume_command(resume_command(V{"t", "--checkpoint-dir", "D"})),
            (V{"t", "--checkpoint-dir", "D", "--resume"}));
  EXPECT_EQ(checkpoint_dir_of(V{"t", "--checkpoint-dir", "A", "--checkpoint-dir=B"}), "B");
  EXPECT_EQ(checkpoint_dir_of(V{"t", "--checkpoint-dir"}), "");  // no value: not ours to judge
  EXPECT_EQ(checkpoint_dir_of(V{"--checkpoint-dir", "A"}), "");  // the program itself
}

TEST(LaunchRestartOptions, PolicyLineShowsAControlByteInTheDirectoryAsAnEscape) {
  using V = std::vector<std::string>;
  EXPECT_EQ(restart_policy_line(0, V{"t", "--checkpoint-dir", "D"}), "");
  EXPECT_EQ(restart_policy_line(2, V{"t", "--checkpoint-dir", "a\nb"}),
            "restarts: up to 2 after a job failure (--max-restarts), waiting 1 s, doubling, at most 30 s; "
            "restarted ranks run with --resume (checkpoints in a\\x0ab)\n");
  EXPECT_EQ(resume_point("a\rb", false), "resuming from the newest checkpoint in a\\x0db");
}

TEST(LaunchRestartOptions, BackoffDoublesToThirtySeconds) {
  EXPECT_EQ(restart_backoff_s(1), 1);
  EXPECT_EQ(restart_backoff_s(2), 2);
  EXPECT_EQ(restart_backoff_s(3), 4);
  EXPECT_EQ(restart_backoff_s(5), 16);
  EXPECT_EQ(restart_backoff_s(6), 30);
  EXPECT_EQ(restart_backoff_s(1000000), 30);
}

TEST(LaunchRestartOptions, ResumePointReadsTheNewestCheckpointName) {
  const std::string d = testutil::make_temp_dir("restartpoint");
  EXPECT_EQ(resume_point("", true), "starting from scratch (no --checkpoint-dir)");
  EXPECT_EQ(resume_point(d, true), "starting from the beginning (no checkpoint yet in " + d + ")");
  testutil::write_file(d + "/ckpt-000000000008.bin", "x");
  testutil::write_file(d + "/ckpt-000000000012.bin", "x");
  testutil::write_file(d + "/ckpt-000000000099.bin.tmp", "x");
  testutil::write_file(d + "/ckpt-00000000001x.bin", "x");
  EXPECT_EQ(resume_point(d, true), "resuming from step 12 (" + d + "/ckpt-000000000012.bin)");
  EXPECT_EQ(resume_point(d, false), "resuming from the newest checkpoint in " + d);
  EXPECT_EQ(resume_point(d + "/missing", true), "resuming from the newest checkpoint in " + d + "/missing");
  std::system(("rm -rf '" + d + "'").c_str());
}

// Issue 11: checkpoints are named by run (ckpt-<run id>-<step>.bin) and runs may share a
// directory: the restarted job's own file is the one written last, not another run's higher step.
TEST(LaunchRestartOptions, ResumePointNamesTheFileWrittenLast) {
  const std::string d = testutil::make_temp_dir("restartpoint");
  const std::string other = d + "/ckpt-aaaaaaaaaaaaaaaa-000000000060.bin";
  const std::string own = d + "/ckpt-bbbbbbbbbbbbbbbb-000000000030.bin";
  testutil::write_file(other, "x");
  testutil::write_file(own, "x");
  testutil::write_file(d + "/ckpt-bbbbbbbbbbbbbbbb-000000000020.bin", "x");
  const struct timespec older[2] = {{1000, 0}, {1000, 0}}, newer[2] = {{2000, 0}, {2000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, other.c_str(), older, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, (d + "/ckpt-bbbbbbbbbbbbbbbb-000000000020.bin").c_str(), newer, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, own.c_str(), newer, 0), 0);
  EXPECT_EQ(resume_point(d, true), "resuming from step 30 (" + own + ")") << "same time: the higher step";
  long long step = 0;
  EXPECT_TRUE(checkpoint_step_of_name("ckpt-bbbbbbbbbbbbbbbb-000000000030.bin", &step));
  EXPECT_EQ(step, 30);
  EXPECT_FALSE(checkpoint_step_of_name("ckpt-bbbbbbbbbbbbbbbB-000000000030.bin", &step));
  EXPECT_FALSE(checkpoint_step_of_name("ckpt-bbbbbbbbbbbbbbbb-.bin", &step));
  std::system(("rm -rf '" + d + "'").c_str());
}

}  // namespace
