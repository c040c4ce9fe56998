// marked_job_test: the base fixture of the end-to-end launcher tests that start real jobs
// (LaunchElastic, LaunchElasticGrow, LaunchRestarts): a unique marker that every process of the
// test's job carries in its command line (through dir_, or as an argument), a scratch directory
// /tmp/baresgd-<marker>, the absolute ./train and ./launch; teardown kills what carries the marker,
// removes the directory and fails when a process survives. Also the --sample-record reader.
#pragma once
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/fault_harness.h"
#include "tests/test_util.h"

namespace faultharness {

class MarkedJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_ = unique_marker();
    dir_ = "/tmp/baresgd-" + marker_;
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_;
    train_ = abs_path(testutil::train_bin());
    launch_ = abs_path(testutil::launch_bin());
  }
  void TearDown() override {
    kill_procs_with(marker_);
    std::system(("rm -rf '" + dir_ + "'").c_str());
    EXPECT_GE(wait_no_procs(marker_, teardown_wait_s_), 0) << "processes survived teardown";
  }
  std::string marker_, dir_, train_, launch_;
  int teardown_wait_s_ = 5;  // how long the job's processes may take to go after the kill
};

// Each epoch's samples in a ./train --sample-record file ("step epoch rank index ..." per line):
// epoch -> sample index -> how many times it was trained.
inline std::map<int, std::map<int, int>> samples_by_epoch(const std::string& record) {
  std::map<int, std::map<int, int>> out;
  for (const std::string& line : lines_of(read_file(record))) {
    std::istringstream words(line);
    long long step = 0, epoch = 0, rank = 0, idx = 0;
    words >> step >> epoch >> rank;
    while (words >> idx) ++out[int(epoch)][int(idx)];
  }
  return out;
}

}  // namespace faultharness
