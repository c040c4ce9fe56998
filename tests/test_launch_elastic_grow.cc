// test_launch_elastic_grow: a running elastic ./launch job grows when its --host-discovery-script
// reports more slots (launcher/elastic_grow.h): it waits for the next checkpoint, stops, and starts
// again with --resume on the larger world (capped by --max-np); without --checkpoint-dir it says
// once that it does not grow and finishes on its first world. The ./train test checks with
// --sample-record that every sample of each epoch is trained exactly once across the growth.
//
// Env: BARESGD_LAUNCH, BARESGD_TRAIN (as the rest of the suite).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fault_harness.h"
#include "tests/go_file.h"
#include "tests/marked_job_test.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

class LaunchElasticGrow : public MarkedJobTest {
 protected:
  // Prints `later` once the file dir_/flag exists, `first` before.
  std::string discovery(const std::string& first, const std::string& later) {
    return "if [ -e " + dir_ + "/flag ]; then echo " + later + "; else echo " + first + "; fi";
  }
};

// A shell rank of the first world makes discovery report more, then, as a trainer does, writes a
// checkpoint every 0.1 s from step 40 on (every 20 steps) until it is stopped; a resumed rank says so
// and exits. Whenever the launcher's rediscovery sees the growth, a newer checkpoint follows.
std::string fake_trainer(const std::string& dir) {
  return "case \" $* \" in *\" --resume \"*) echo resumed size=$BARESGD_SIZE; exit 0;; esac; touch " + dir +
         "/flag; s=40; while [ $s -le 12000 ]; do touch " + dir +
         "/ck/ckpt-$(printf %012d $s).bin; s=$((s+20)); sleep 0.1; done; echo not stopped";
}

TEST_F(LaunchElasticGrow, GrowthIsCappedByMaxNp) {
  ASSERT_EQ(::mkdir((dir_ + "/ck").c_str(), 0755), 0);
  Proc job({launch_, "--gloo", "--max-np", "2", "--host-discovery-script", discovery("localhost:1", "localhost:3"),
            "/bin/sh", "-c", fake_trainer(dir_), marker_, "--checkpoint-dir", dir_ + "/ck"});
  ASSERT_EQ(job.code(60), 0) << job.err();
  EXPECT_TRUE(std::regex_match(job.err(), std::regex("launch: elastic start 1: 1 rank on localhost:1\n"
                                                     "launch: elastic growth: discovery reports localhost:3; stopping "
                                                     "after checkpoint step [1-9][0-9]*0 to restart on 2 "
                                                     "ranks \\(was 1\\)\n"
                                                     "launch: elastic start 2: 2 ranks on localhost:2 \\(was 1\\)\n")))
      << job.err();
  EXPECT_TRUE(contains(job.out(), "[1]<stdout>:resumed size=2")) << job.out();
  EXPECT_FALSE(contains(job.out(), "not stopped")) << job.out();
}

TEST_F(LaunchElasticGrow, ABadRediscoveryIntervalIsNamed) {
  Proc job({"/usr/bin/env", "BARESGD_ELASTIC_POLL_MS=5", launch_, "--gloo", "--host-discovery-script",
            discovery("localhost:1", "localhost:2"), "/bin/sh", "-c", "sleep 20; echo ran", marker_});
  EXPECT_NE(job.code(60), 0);
  EXPECT_TRUE(contains(job.err(), "BARESGD_ELASTIC_POLL_MS '5' is not 10..60000 milliseconds")) << job.err();
  EXPECT_FALSE(contains(job.out(), "ran")) << job.out();
}

TEST_F(LaunchElasticGrow, WithoutCheckpointsTheJobSaysSoOnceAndKeepsItsWorld) {
  // The rank runs until the test has seen the launcher's line (its go file).
  const std::string rank =
      "touch " + dir_ + "/flag; " + testutil::sh_wait_for(dir_ + "/go") + "echo done size=$BARESGD_SIZE";
  Proc job({launch_, "--gloo", "--host-discovery-script", discovery("localhost:1", "localhost:2"), "/bin/sh", "-c",
            rank, marker_});
  EXPECT_GE(job.wait_for(std::regex("the job does not grow without --checkpoint-dir"), 60, true, Clock::now()), 0)
      << job.err();
  ASSERT_TRUE(testutil::touch_file(dir_ + "/go"));
  ASSERT_EQ(job.code(60), 0) << job.err();
  EXPECT_EQ(job.err(),
            "launch: elastic start 1: 1 rank on localhost:1\n"
            "launch: elastic growth: discovery reports localhost:2; the job does not grow without --checkpoint-dir (a "
            "restart would lose its work), it keeps running on 1 rank\n");
  EXPECT_TRUE(contains(job.out(), "done size=1")) << job.out();
}

// ./train on 1 rank; discovery reports a second slot once a checkpoint exists; the job grows to 2
// ranks after the next checkpoint and finishes, every sample of the 4 epochs trained once.
TEST_F(LaunchElasticGrow, ATrainerGrowsToTwoRanksSeeingEverySampleOnce) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt", record = dir_ + "/samples";
  // About 6 s for the 4 epochs on 1 rank, a checkpoint every 4 steps (~0.1 s): rediscovery every
  // 50 ms finds the second slot long before the job could end on its own.
  write_mnist_subset(data, 60000, 1000);
  const std::string script =
      "if ls " + ckpt + "/ckpt-* >/dev/null 2>&1; then echo localhost:2; else echo localhost:1; fi";
  Proc job({"/usr/bin/env",
            "BARESGD_ELASTIC_POLL_MS=50",
            launch_,
            "--gloo",
            "--max-np",
            "2",
            "--host-discovery-script",
            script,
            abs_path(testutil::train_bin()),
            "--batch-size",
            "64",
            "--epochs",
            "4",
            "--log-interval",
            "10",
            "--data-dir",
            data,
            "--checkpoint-every",
            "4",
            "--checkpoint-dir",
            ckpt,
            "--sample-record",
            record});
  const int code = job.code(300);
  const std::string err = job.err();
  ASSERT_EQ(code, 0) << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 1 rank on localhost:1\n")) << err;
  EXPECT_TRUE(contains(err, "launch: elastic growth: discovery reports localhost:2; stopping after checkpoint step "))
      << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 2: 2 ranks on localhost:2 (was 1)\n")) << err;
  auto epochs = samples_by_epoch(record);
  ASSERT_EQ(epochs.size(), 4u) << read_file(record).substr(0, 400);
  for (auto& [epoch, seen] : epochs) {
    EXPECT_EQ(seen.size(), 60000u) << "epoch " << epoch << " skipped samples";
    int twice = 0;
    for (auto& [idx, n] : seen) twice += n != 1;
    EXPECT_EQ(twice, 0) << "epoch " << epoch << ": samples trained more than once";
  }
}

}  // namespace
