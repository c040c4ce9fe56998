// test_stop_signals: SIGTERM and SIGUSR1 save the run (issue 25, case 4). A rank that receives
// one finishes its step, every rank agrees on the step boundary to stop at (one collective),
// rank 0 saves that step, prints one line, and every rank exits 128 + the signal; ./launch
// forwards the signals it receives to every rank and reports such a stop as a saved stop, not a
// failure; --resume then ends bit-identical to an uninterrupted run. A second signal exits at once.
//
// A rank is stopped at a known step by the test hook BARESGD_TEST_STOP_AT=RANK:STEP (it raises
// SIGSTOP before that step's boundary vote): the test signals it while it is stopped (the signal
// waits, pending) and continues it, so the agreed step is known without any timing.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/stop_agreement.h"
#include "src/stop_signal.h"
#include "tests/fault_harness.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

// ---- pure parts --------------------------------------------------------------------------------

TEST(StopSignalRules, ARepeatWithinTheEchoWindowIsTheSameStop) {
  const int64_t ms = 1000000;
  EXPECT_FALSE(is_second_signal(0, 0, 1000));
  EXPECT_FALSE(is_second_signal(5 * ms, 5 * ms + 999 * ms, 1000));
  EXPECT_TRUE(is_second_signal(5 * ms, 5 * ms + 1000 * ms, 1000));
  EXPECT_TRUE(is_second_signal(5 * ms, 5 * ms, 0));  // window 0: every repeat is a second signal
}

TEST(StopSignalRules, TheVoteStopsOnAnySignalAndSigtermWins) {
  EXPECT_EQ(stop_vote_of(0, 0).signal, 0);
  EXPECT_EQ(stop_vote_of(0, 0).exit_code(), 0);
  EXPECT_EQ(stop_vote_of(1, 0).signal, SIGTERM);
  EXPECT_EQ(stop_vote_of(1, 0).exit_code(), 143);
  EXPECT_EQ(stop_vote_of(0, 3).signal, SIGUSR1);
  EXPECT_EQ(stop_vote_of(0, 3).exit_code(), 138);
  EXPECT_EQ(stop_vote_of(0, 3).ranks, 3);
  EXPECT_EQ(stop_vote_of(2, 1).signal, SIGTERM);
  EXPECT_EQ(stop_vote_of(2, 1).ranks, 2);
}

TEST(StopSignalRules, TheRanksVoteEveryEighthStepFromStepZero) {
  EXPECT_TRUE(is_stop_vote_step(0));
  EXPECT_TRUE(is_stop_vote_step(8));
  EXPECT_TRUE(is_stop_vote_step(4096));
  for (long long s : {1, 7, 9, 13, 15, 4095}) EXPECT_FALSE(is_stop_vote_step(s)) << s;
}

TEST(StopSignalRules, TestPauseParsesRankColonStep) {
  TestPause p;
  ASSERT_TRUE(parse_test_pause("1:13", &p));
  EXPECT_TRUE(p.active);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.step, 13u);
  for (const char* bad : {"", "1", ":", "1:", ":3", "a:1", "1:b", "-1:2", "1:2:3", " 1:2"}) {
    TestPause q;
    EXPECT_FALSE(parse_test_pause(bad, &q)) << bad;
    EXPECT_FALSE(q.active) << bad;
  }
}

// ---- end to end --------------------------------------------------------------------------------

// 1280 training samples: 10 steps an epoch on 2 ranks of --batch-size 64 (20 on one rank).
constexpr uint32_t kTrain = 1280, kTest = 256;
constexpr int kPauseStep = 13;  // epoch 2, batch 3 on 2 ranks
// The ranks vote every kStopVoteEvery (8) steps: a signal at step 13 stops the run before step 16
// (epoch 2, batch 6 on 2 ranks).
constexpr int kStopStep = 16;
static_assert(kStopStep % kStopVoteEvery == 0 && kPauseStep < kStopStep && kStopStep - kPauseStep < kStopVoteEvery,
              "kStopStep is the first vote at or after kPauseStep");

class StopSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "real MNIST missing in data/MNIST/raw: run `make data`";
    marker_ = unique_marker();
    dir_ = "/tmp/baresgd-" + marker_;
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_;
    write_mnist_subset(dir_ + "/data", kTrain, kTest);
    train_ = abs_path(testutil::train_bin());
    launch_ = abs_path(testutil::launch_bin());
  }
  void TearDown() override {
    if (marker_.empty()) return;
    kill_procs_with(marker_);
    EXPECT_GE(wait_no_procs(marker_, 30), 0) << "processes survived teardown";
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  // ./train's flags for a run of 2 epochs with its checkpoints in dir_/<ckpt> (the data dir
  // carries the marker into every rank's argv).
  std::vector<std::string> train_args(const std::string& ckpt, const std::string& dump,
                                      const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = {train_,
                                  "--threads",
                                  "1",
                                  "--epochs",
                                  "2",
                                  "--data-dir",
                                  dir_ + "/data",
                                  "--checkpoint-dir",
                                  dir_ + "/" + ckpt,
                                  "--dump-params",
                                  dir_ + "/" + dump,
                                  "--log-interval",
                                  "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // env VARS... ./launch -np np --gloo [launch_flags] ./train ...
  std::vector<std::string> launched(int np, const std::vector<std::string>& env, const std::vector<std::string>& train,
                                    const std::vector<std::string>& launch_flags = {}) const {
    std::vector<std::string> a = {"/usr/bin/env"};
    a.insert(a.end(), env.begin(), env.end());
    a.insert(a.end(), {launch_, "-np", std::to_string(np), "--gloo", "--network-interface", "lo"});
    a.insert(a.end(), launch_flags.begin(), launch_flags.end());
    a.insert(a.end(), train.begin(), train.end());
    return a;
  }
  // The uninterrupted run's final parameters (2 ranks).
  std::string uninterrupted() {
    Proc base(launched(2, {}, train_args("base", "base.bin")));
    EXPECT_EQ(base.code(300), 0) << base.out() << base.err();
    return read_file(dir_ + "/base.bin");
  }
  // Waits until rank `rank` of the job has stopped itself (BARESGD_TEST_STOP_AT); its pid.
  pid_t paused_rank(Proc& job, int rank) {
    for (auto t0 = Clock::now(); secs_since(t0) < 300 && job.running();) {
      auto ranks = rank_pids(marker_);
      if (ranks.count(rank) && proc_state(ranks[rank]) == 'T') return ranks[rank];
      ::usleep(10 * 1000);
    }
    ADD_FAILURE() << "rank " << rank << " never paused\n" << job.out() << job.err();
    return -1;
  }
  // --resume of the stopped run in dir_/<ckpt>; its final parameters.
  std::string resumed(const std::string& ckpt) {
    Proc res(launched(2, {}, train_args(ckpt, ckpt + "-resumed.bin", {"--resume"})));
    EXPECT_EQ(res.code(300), 0) << res.out() << res.err();
    EXPECT_TRUE(contains(res.err(), "resum")) << res.err();
    return read_file(dir_ + "/" + ckpt + "-resumed.bin");
  }
  std::string marker_, dir_, train_, launch_;
};

// True when pid has sig pending (process-wide or on its main thread): /proc/PID/status.
bool has_pending(pid_t pid, int sig) {
  const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
  for (const char* field : {"ShdPnd:", "SigPnd:"}) {
    const size_t at = status.find(field);
    if (at == std::string::npos) continue;
    const unsigned long long mask = std::strtoull(status.c_str() + at + std::strlen(field), nullptr, 16);
    if (mask & (1ULL << (sig - 1))) return true;
  }
  return false;
}

// (a), (b): the signal goes to one rank (rank 1) of a ./launch job mid-epoch.
class StopSignalsOneRank : public StopSignals, public ::testing::WithParamInterface<int> {};

TEST_P(StopSignalsOneRank, SavesTheAgreedStepOnceAndResumesBitIdentical) {
  const int sig = GetParam();
  const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGUSR1";
  const std::string base = uninterrupted();
  ASSERT_EQ(base.size(), 21840u * 4) << "the uninterrupted run dumped no parameters";

  Proc job(launched(2, {"BARESGD_TEST_STOP_AT=1:" + std::to_string(kPauseStep)}, train_args("ckpt", "never.bin")));
  const pid_t rank1 = paused_rank(job, 1);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(rank1, sig), 0);
  ASSERT_EQ(::kill(rank1, SIGCONT), 0);
  const int code = job.code(300);
  const std::string err = job.err();
  EXPECT_EQ(code, 128 + sig) << job.out() << err;

  // One checkpoint of the stop, at the agreed step (the epoch-end one of step 10 besides).
  const auto ckpts = checkpoints_in(dir_ + "/ckpt");
  ASSERT_EQ(ckpts.size(), 2u) << err;
  EXPECT_EQ(ckpts.begin()->first, 10);
  EXPECT_EQ(ckpts.rbegin()->first, kStopStep);
  // One line, from rank 0 (which got no signal but stopped at the same step).
  EXPECT_EQ(count_of(err, "train: stopped by"), 1) << err;
  EXPECT_TRUE(contains(err, "[0]<stderr>:train: stopped by " + name + " (received by 1 of 2 ranks) after step " +
                                std::to_string(kStopStep) + " (epoch 2, batch 6): saved " + ckpts.rbegin()->second +
                                "; continue with --resume"))
      << err;
  EXPECT_TRUE(contains(err, "launch: every rank stopped on " + name + " (exit " + std::to_string(128 + sig) +
                                "): a saved stop for ./train, which continues with --resume"))
      << err;
  EXPECT_FALSE(contains(err, "stopping the job")) << "a saved stop is not a failure:\n" << err;
  EXPECT_FALSE(contains(job.out(), "Train Epoch: 2 [" + std::to_string(6 * 64) + "/")) << "a step after the stop ran";
  EXPECT_NE(::access((dir_ + "/never.bin").c_str(), F_OK), 0) << "a stopped run dumped final parameters";

  EXPECT_TRUE(resumed("ckpt") == base) << "the resumed run's parameters differ from the uninterrupted run's";
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignalsOneRank, ::testing::Values(SIGTERM, SIGUSR1),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGTERM ? "Sigterm" : "Sigusr1");
                         });

// One ./train (no launcher) paused before step `step`: signals `sigs` reach it while it is stopped,
// then it continues. Its exit code.
int single_rank_signalled(Proc& job, const std::vector<int>& sigs) {
  for (auto t0 = Clock::now(); proc_state(job.pid()) != 'T' && job.running() && secs_since(t0) < 300;)
    ::usleep(10 * 1000);
  EXPECT_EQ(proc_state(job.pid()), 'T') << job.out() << job.err();
  for (int sig : sigs) EXPECT_EQ(::kill(job.pid(), sig), 0);
  EXPECT_EQ(::kill(job.pid(), SIGCONT), 0);
  return job.code(300);
}

// (c) A second signal (after the echo window, here 0 ms) exits at once: no checkpoint, one line,
// the rank dies of the signal. (SIGUSR1 and SIGTERM wait together; Linux delivers the lower
// number, SIGUSR1, first.)
TEST_F(StopSignals, ASecondSignalExitsAtOnceWithoutSaving) {
  Proc job({"/usr/bin/env", "BARESGD_TEST_STOP_AT=0:" + std::to_string(kPauseStep), "BARESGD_SIGNAL_ECHO_MS=0", train_,
            "--threads", "1", "--epochs", "1", "--data-dir", dir_ + "/data", "--checkpoint-dir", dir_ + "/ckpt",
            "--log-interval", "1"});
  EXPECT_EQ(single_rank_signalled(job, {SIGUSR1, SIGTERM}), 128 + SIGTERM) << job.err();
  EXPECT_EQ(job.err().substr(job.err().rfind("train: ")),
            "train: a second stop signal: exiting at once, without saving\n");
  EXPECT_FALSE(contains(job.err(), "stopped by")) << job.err();
  EXPECT_TRUE(checkpoints_in(dir_ + "/ckpt").empty()) << "the second signal still saved";
}

// Signals that arrive together (within the echo window) are one stop: Slurm signals every process
// of a job and ./launch and srun forward theirs, so one stop reaches a rank more than once. The
// first (SIGUSR1) decides the exit status.
TEST_F(StopSignals, SignalsArrivingTogetherAreOneStop) {
  Proc job({"/usr/bin/env", "BARESGD_TEST_STOP_AT=0:" + std::to_string(kPauseStep), train_, "--threads", "1",
            "--epochs", "1", "--data-dir", dir_ + "/data", "--checkpoint-dir", dir_ + "/ckpt", "--log-interval", "1"});
  EXPECT_EQ(single_rank_signalled(job, {SIGUSR1, SIGTERM}), 128 + SIGUSR1) << job.err();
  const auto ckpts = checkpoints_in(dir_ + "/ckpt");
  ASSERT_EQ(ckpts.size(), 1u) << job.err();
  EXPECT_EQ(ckpts.begin()->first, kStopStep);
  EXPECT_TRUE(contains(job.err(), "train: stopped by SIGUSR1 (received by 1 of 1 ranks) after step " +
                                      std::to_string(kStopStep) + " (epoch 1, batch " + std::to_string(kStopStep) +
                                      "): saved " + ckpts.begin()->second + "; continue with --resume\n"))
      << job.err();
}

// A signal before the first step (during start-up: loading, rendezvous) stops the run at its first
// step boundary: nothing to save, the same exit status.
TEST_F(StopSignals, ASignalBeforeTheFirstStepStopsWithNothingToSave) {
  Proc job({"/usr/bin/env", "BARESGD_TEST_STOP_AT=0:0", train_, "--threads", "1", "--epochs", "1", "--data-dir",
            dir_ + "/data", "--checkpoint-dir", dir_ + "/ckpt"});
  EXPECT_EQ(single_rank_signalled(job, {SIGTERM}), 128 + SIGTERM) << job.err();
  EXPECT_TRUE(contains(job.err(),
                       "train: stopped by SIGTERM (received by 1 of 1 ranks) after step 0 (epoch 1, "
                       "batch 0): nothing to save (no step since the run started); continue with --resume\n"))
      << job.err();
  EXPECT_TRUE(checkpoints_in(dir_ + "/ckpt").empty());
  EXPECT_TRUE(job.out().empty()) << job.out();
}

// (d) SIGTERM to ./launch reaches every rank (through their agents); the job saves and stops.
TEST_F(StopSignals, SigtermToLaunchIsForwardedAndTheJobSaves) {
  const std::string base = uninterrupted();
  Proc job(launched(2, {"BARESGD_TEST_STOP_AT=1:" + std::to_string(kPauseStep)}, train_args("ckpt", "never.bin"),
                    {"--stop-grace", "120"}));
  const pid_t rank1 = paused_rank(job, 1);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(job.pid(), SIGTERM), 0);
  // The launcher's SIGTERM reached the stopped rank through its agent: pending there.
  for (auto t0 = Clock::now(); !has_pending(rank1, SIGTERM) && secs_since(t0) < 60;) ::usleep(10 * 1000);
  ASSERT_TRUE(has_pending(rank1, SIGTERM)) << job.err();
  ASSERT_EQ(::kill(rank1, SIGCONT), 0);
  EXPECT_EQ(job.code(300), 143) << job.out() << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "launch: received SIGTERM; forwarding it to every rank and stopping the job")) << err;
  const auto ckpts = checkpoints_in(dir_ + "/ckpt");
  ASSERT_EQ(ckpts.size(), 2u) << err;
  EXPECT_EQ(ckpts.rbegin()->first, kStopStep);
  EXPECT_EQ(count_of(err, "train: stopped by SIGTERM"), 1) << err;
  EXPECT_TRUE(contains(err, "launch: every rank stopped on SIGTERM (exit 143)")) << err;
  EXPECT_TRUE(resumed("ckpt") == base) << "the resumed run's parameters differ from the uninterrupted run's";
}

// (d) on remote ranks: SIGUSR1 to ./launch reaches ranks on two ssh hosts (hpc01, hpc03 of
// tests/test_hosts.sh) through their agents' control bytes; the job saves and stops with 138.
class StopSignalsRemote : public TestHostsFixture<StopSignals> {};

TEST_F(StopSignalsRemote, SigusrToLaunchReachesRemoteRanksThroughTheirAgents) {
  const std::string base = uninterrupted();
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "BARESGD_TEST_STOP_AT=1:" + std::to_string(kPauseStep),
                                   launch_,
                                   "-np",
                                   "2",
                                   "--gloo",
                                   "-H",
                                   "hpc01:1,hpc03:1",
                                   "-F",
                                   cfg(),
                                   "--stop-grace",
                                   "120"};
  for (const std::string& a : train_args("ckpt", "never.bin")) argv.push_back(a);
  Proc job(argv);
  const pid_t rank1 = paused_rank(job, 1);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(job.pid(), SIGUSR1), 0);
  for (auto t0 = Clock::now(); !has_pending(rank1, SIGUSR1) && secs_since(t0) < 60;) ::usleep(10 * 1000);
  ASSERT_TRUE(has_pending(rank1, SIGUSR1)) << job.err();
  ASSERT_EQ(::kill(rank1, SIGCONT), 0);
  EXPECT_EQ(job.code(300), 138) << job.out() << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "launch: received SIGUSR1; forwarding it to every rank and stopping the job")) << err;
  EXPECT_TRUE(contains(err, "[0]<stderr>:train: stopped by SIGUSR1")) << err;
  EXPECT_TRUE(contains(err, "launch: every rank stopped on SIGUSR1 (exit 138)")) << err;
  const auto ckpts = checkpoints_in(dir_ + "/ckpt");
  ASSERT_EQ(ckpts.size(), 2u) << err;
  EXPECT_EQ(ckpts.rbegin()->first, kStopStep);
  EXPECT_TRUE(resumed("ckpt") == base) << "the resumed run's parameters differ from the uninterrupted run's";
}

}  // namespace
