// test_options: ./train's flags — the Horovod example's defaults, both value syntaxes, and a
// usage error (exit 2) naming the flag for every malformed one.
#include <gtest/gtest.h>

#include "src/options.h"
#include "tests/test_util.h"

namespace {

Options parse(std::vector<std::string> a) { return parse_options(a); }

std::string usage_error(std::vector<std::string> a) {
  try {
    parse_options(a);
  } catch (const TrainUsageError& e) {
    return e.message;
  }
  return "";
}

TEST(Options, HorovodExampleDefaults) {
  Options o = parse({});
  EXPECT_EQ(o.batch_size, 64);
  EXPECT_EQ(o.test_batch_size, 1000);
  EXPECT_EQ(o.epochs, 10);
  EXPECT_DOUBLE_EQ(o.lr, 0.01);
  EXPECT_DOUBLE_EQ(o.momentum, 0.5);
  EXPECT_FALSE(o.no_cuda);
  EXPECT_EQ(o.seed, 42);
  EXPECT_EQ(o.log_interval, 10);
  EXPECT_FALSE(o.fp16_allreduce);
  EXPECT_FALSE(o.use_mixed_precision);
  EXPECT_FALSE(o.use_adasum);
  EXPECT_DOUBLE_EQ(o.gradient_predivide_factor, 1.0);
  EXPECT_EQ(o.data_dir, "./data");
  EXPECT_EQ(o.num_proc, 0);
}

TEST(Options, BothValueSyntaxesAndSwitches) {
  Options o = parse({"--batch-size", "32", "--lr=0.05", "--epochs=2", "--no-cuda", "--fp16-allreduce", "--use-adasum",
                     "--gradient-predivide-factor", "2.5", "--data-dir", "/x", "--num-proc", "4", "--hosts", "a:2,b:2",
                     "--communication", "mpi", "--seed", "-3"});
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_DOUBLE_EQ(o.lr, 0.05);
  EXPECT_EQ(o.epochs, 2);
  EXPECT_TRUE(o.no_cuda && o.fp16_allreduce && o.use_adasum);
  EXPECT_DOUBLE_EQ(o.gradient_predivide_factor, 2.5);
  EXPECT_EQ(o.data_dir, "/x");
  EXPECT_EQ(o.num_proc, 4);
  EXPECT_EQ(o.hosts, "a:2,b:2");
  EXPECT_EQ(o.communication, "mpi");
  EXPECT_EQ(o.seed, -3);
}

TEST(Options, MalformedFlagsNameTheFlag) {
  EXPECT_NE(usage_error({"--batch-size", "abc"}).find("--batch-size: invalid int value: 'abc'"), std::string::npos);
  EXPECT_NE(usage_error({"--batch-size", "0"}).find("--batch-size"), std::string::npos);
  EXPECT_NE(usage_error({"--batch-size", "12x"}).find("invalid int"), std::string::npos);
  EXPECT_NE(usage_error({"--lr", "fast"}).find("--lr: invalid float value"), std::string::npos);
  EXPECT_NE(usage_error({"--lr", "nan"}).find("--lr"), std::string::npos);
  EXPECT_NE(usage_error({"--gradient-predivide-factor", "0"}).find("must be > 0"), std::string::npos);
  EXPECT_NE(usage_error({"--epochs"}).find("--epochs: expected one argument"), std::string::npos);
  EXPECT_NE(usage_error({"--bogus"}).find("unrecognized argument: --bogus"), std::string::npos);
  EXPECT_NE(usage_error({"stray"}).find("unrecognized argument: 'stray'"), std::string::npos);
  EXPECT_NE(usage_error({"--communication", "nccl"}).find("invalid choice: 'nccl'"), std::string::npos);
  EXPECT_NE(usage_error({"--no-cuda=1"}).find("--no-cuda"), std::string::npos);
  EXPECT_NE(usage_error({"--hosts", "a:1"}).find("need --num-proc"), std::string::npos);
}

// The what-if switches (src/what_if_spec.h): values, and one line naming the flag for a bad one.
TEST(Options, WhatIfSwitches) {
  Options o = parse({"--straggler", "2:5", "--link-delay=0.5", "--link-bandwidth", "100Mbit"});
  EXPECT_EQ(o.straggler, "2:5");
  EXPECT_EQ(o.straggler_spec.rank, 2);
  EXPECT_DOUBLE_EQ(o.straggler_spec.sleep_ms, 5);
  EXPECT_DOUBLE_EQ(o.straggler_spec.factor, 0);
  EXPECT_DOUBLE_EQ(o.link_delay_ms, 0.5);
  EXPECT_EQ(o.link_bandwidth, "100Mbit");
  EXPECT_DOUBLE_EQ(o.link_bytes_per_s, 12.5e6);
  Options f = parse({"--straggler=1:x2.5", "--link-bandwidth=10MB/s"});
  EXPECT_EQ(f.straggler_spec.rank, 1);
  EXPECT_DOUBLE_EQ(f.straggler_spec.factor, 2.5);
  EXPECT_DOUBLE_EQ(f.link_bytes_per_s, 1e7);
  EXPECT_FALSE(parse({}).straggler_spec.active());
  EXPECT_EQ(usage_error({"--straggler", "2"}),
            "argument --straggler: expected RANK:MS or RANK:xFACTOR (e.g. 2:5 or 2:x3)");
  EXPECT_EQ(usage_error({"--straggler", "-1:5"}), "argument --straggler: rank '-1' is not a rank (0..65535)");
  EXPECT_EQ(usage_error({"--straggler", "0:x1"}), "argument --straggler: factor 'x1' is not xF with 1 < F <= 1000");
  EXPECT_EQ(usage_error({"--straggler", "0:5ms"}), "argument --straggler: '5ms' is not milliseconds in [0, 60000]");
  EXPECT_EQ(usage_error({"--link-delay", "-2"}), "argument --link-delay: '-2' is not milliseconds in [0, 10000]");
  EXPECT_EQ(usage_error({"--link-bandwidth", "fast"}),
            "argument --link-bandwidth: 'fast' does not start with a number (e.g. 100Mbit, 10MB/s)");
  EXPECT_EQ(usage_error({"--link-bandwidth", "100"}),
            "argument --link-bandwidth: '100' has no known unit (bit, kbit, Mbit, Gbit or B/s, kB/s, MB/s, GB/s)");
  EXPECT_EQ(usage_error({"--link-bandwidth", "0Mbit"}),
            "argument --link-bandwidth: '0Mbit' is not between 1 B/s and 1000 GB/s");
}

TEST(TrainMain, HelpAndUsageErrors) {
  auto h = testutil::run(testutil::train_bin() + " --help", 30);
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--gradient-predivide-factor"), std::string::npos);
  auto bad = testutil::run(testutil::train_bin() + " --epochs two", 30);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("usage: train"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("train: error: argument --epochs: invalid int value: 'two'"), std::string::npos) << bad.err;
  auto unk = testutil::run(testutil::train_bin() + " --frobnicate", 30);
  EXPECT_EQ(unk.status, 2);
  auto mp = testutil::run(testutil::train_bin() + " --use-mixed-precision", 30);
  EXPECT_EQ(mp.status, 2);
  EXPECT_NE(mp.err.find("needs a GPU"), std::string::npos);
}

}  // namespace
