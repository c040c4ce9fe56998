// test_train: ./train end to end on real MNIST (data/, fetched by `make data`): the example's
// log lines byte for byte, test accuracy after 1 and 10 epochs, the test-only flags.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "tests/test_util.h"

namespace {

double accuracy_of(const std::string& out) {
  std::smatch m;
  std::string last;
  std::regex re(R"(Test set: Average loss: [0-9.]+, Accuracy: ([0-9.]+)%)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) last = (*it)[1];
  return last.empty() ? -1 : std::stod(last);
}

void require_data() { ASSERT_TRUE(testutil::have_mnist()) << "real MNIST missing in data/MNIST/raw: run `make data`"; }

TEST(TrainEndToEnd, OneEpochLogLinesAndAccuracy) {
  require_data();
  auto r = testutil::run(testutil::train_bin() + " --epochs 1", 600);
  ASSERT_EQ(r.status, 0) << r.err;
  // 938 batches, a line every 10: batch 0, 10, ..., 930.
  std::istringstream in(r.out);
  std::string line;
  int train_lines = 0;
  std::regex train_re(R"(Train Epoch: 1 \[(\d+)/60000 \((\d+)%\)\]\tLoss: \d+\.\d{6})");
  while (std::getline(in, line)) {
    if (line.rfind("Train Epoch", 0) != 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, train_re)) << line;
    EXPECT_EQ(std::stoi(m[1]), train_lines * 10 * 64) << line;
    ++train_lines;
  }
  EXPECT_EQ(train_lines, 94);
  EXPECT_NE(r.out.find("Train Epoch: 1 [59520/60000 (99%)]\tLoss: "), std::string::npos);
  std::regex tail(R"(\n\nTest set: Average loss: \d+\.\d{4}, Accuracy: \d+\.\d{2}%\n\n$)");
  EXPECT_TRUE(std::regex_search(r.out, tail)) << r.out.substr(r.out.size() - 200);
  double acc = accuracy_of(r.out);
  RecordProperty("accuracy_1_epoch", std::to_string(acc));
  std::printf("1 epoch: %.2f%% in %.1f s\n", acc, r.seconds);
  EXPECT_GE(acc, 93.0);
}

TEST(TrainEndToEnd, TenEpochsReach98) {
  require_data();
  auto r = testutil::run(testutil::train_bin() + " --epochs 10 --log-interval 1000", 1800);
  ASSERT_EQ(r.status, 0) << r.err;
  double acc = accuracy_of(r.out);
  std::printf("10 epochs: %.2f%% in %.1f s\n", acc, r.seconds);
  EXPECT_GE(acc, 98.0);
}

TEST(TrainEndToEnd, MaxStepsAndDumpParams) {
  require_data();
  std::string dir = testutil::make_temp_dir("dump");
  auto r = testutil::run(testutil::train_bin() + " --max-steps 3 --dump-params " + dir + "/p.bin", 120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(testutil::read_file(dir + "/p.bin").size(), 21840u * 4);
  EXPECT_EQ(r.out.find("Test set"), std::string::npos);  // stopped before the epoch ended
  auto r2 = testutil::run(testutil::train_bin() + " --max-steps 3 --dump-params " + dir + "/q.bin", 120);
  EXPECT_EQ(testutil::read_file(dir + "/p.bin"), testutil::read_file(dir + "/q.bin"))
      << "same seed, same steps: bit-identical weights";
  auto bad = testutil::run(testutil::train_bin() + " --max-steps 1 --dump-params /nonexistent/x.bin", 120);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--dump-params /nonexistent/x.bin: directory /nonexistent does not exist"), std::string::npos)
      << bad.err;
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Refusals that must come before training, not after it (issue 11).
TEST(TrainRefusals, DumpParamsDirectoryIsCheckedBeforeTraining) {
  require_data();
  auto r = testutil::run(testutil::train_bin() + " --max-steps 1 --dump-params /nonexistent/x.bin", 120);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent/x.bin"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos) << "trained before refusing:\n" << r.out;
}

TEST(TrainRefusals, EmptyCheckpointDirIsRefused) {
  auto r = testutil::run(testutil::train_bin() + " --max-steps 1 --checkpoint-dir ''", 120);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("argument --checkpoint-dir: empty directory name"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos) << r.out;
}

TEST(TrainRefusals, ResumeRefusesACheckpointOfAnotherSeed) {
  require_data();
  std::string dir = testutil::make_temp_dir("seed");
  auto first = testutil::run(
      testutil::train_bin() + " --threads 1 --max-steps 4 --checkpoint-every 2 --checkpoint-dir " + dir, 120);
  ASSERT_EQ(first.status, 0) << first.err;
  auto other = testutil::run(
      testutil::train_bin() + " --threads 1 --max-steps 6 --seed 1 --resume --checkpoint-dir " + dir, 120);
  EXPECT_EQ(other.status, 1);
  EXPECT_TRUE(std::regex_search(other.err, std::regex("ckpt-[0-9a-f]{16}-000000000004\\.bin was written with "
                                                      "--seed 42, this run has --seed 1 ")))
      << other.err;
  EXPECT_EQ(other.out.find("Train Epoch"), std::string::npos) << other.out;
  auto same = testutil::run(testutil::train_bin() + " --threads 1 --max-steps 6 --resume --checkpoint-dir " + dir, 120);
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_NE(same.err.find("resuming from"), std::string::npos) << same.err;
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(TrainRefusals, StartRemovesStaleCheckpointTempFilesWithALine) {
  require_data();
  std::string dir = testutil::make_temp_dir("stale");
  testutil::write_file(dir + "/.ckpt-000000000002.bin.tmp", "killed writer");
  auto r = testutil::run(testutil::train_bin() + " --threads 1 --max-steps 1 --checkpoint-dir " + dir, 120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("train: removed " + dir + "/.ckpt-000000000002.bin.tmp"), std::string::npos) << r.err;
  EXPECT_NE(::access((dir + "/.ckpt-000000000002.bin.tmp").c_str(), F_OK), 0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
