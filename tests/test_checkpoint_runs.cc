// test_checkpoint_runs: checkpoints belong to a run (issue 11), end to end with ./train on real
// MNIST: two runs sharing a --checkpoint-dir keep their own files (named ckpt-<run id>-<step>.bin,
// each pruned to its own newest three) and --resume continues the run of its own configuration;
// a checkpoint of another --lr, --momentum or --batch-size is refused naming the setting, and
// continued (as a new run, said in one line) with --resume-any-config; a version 3 file (no run,
// no configuration) still resumes bit for bit; a corrupt configuration block is named and skipped.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "src/checkpoint.h"
#include "src/net.h"
#include "tests/checkpoint_v2.h"
#include "tests/test_util.h"

namespace {

using testutil::RunResult;

void require_data() { ASSERT_TRUE(testutil::have_mnist()) << "real MNIST missing in data/MNIST/raw: run `make data`"; }

RunResult train(const std::string& dir, const std::string& flags) {
  return testutil::run(testutil::train_bin() + " --threads 1 --epochs 1 --checkpoint-dir " + dir + " " + flags, 300);
}

// The checkpoint names in dir, sorted ("ckpt-<run>-<step>.bin").
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  const std::string ls = testutil::run("ls " + dir).out;
  size_t at = 0;
  for (size_t nl; (nl = ls.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(ls.substr(at, nl - at));
  return out;
}

// The run id of dir's checkpoint of `step`, or "" (the first in name order when two runs have one).
std::string run_of_step(const std::string& dir, int step) {
  std::regex re("ckpt-([0-9a-f]{16})-0*" + std::to_string(step) + "\\.bin");
  for (const std::string& n : names_in(dir)) {
    std::smatch m;
    if (std::regex_match(n, m, re)) return m[1];
  }
  return "";
}

std::string file_of(const std::string& dir, const std::string& run, int step) {
  char s[16];
  std::snprintf(s, sizeof s, "%012d", step);
  return dir + "/ckpt-" + run + "-" + s + ".bin";
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

// The reproduction of issue 11: run A (seed 42) to step 60, then a fresh run B (seed 1) in the
// same directory. Before, B's ckpt-20 overwrote A's, pruning deleted B's ckpt-10 and -20 and left
// ckpt-30, -40, -60, and `--seed 1 --resume` continued A's ckpt-60.
TEST(CheckpointRuns, TwoRunsInOneDirectoryKeepAndResumeTheirOwnFiles) {
  require_data();
  const std::string top = testutil::make_temp_dir("ckruns"), d = top + "/D";
  ASSERT_EQ(train(d, "--max-steps 60 --checkpoint-every 20").status, 0);
  auto b = train(d, "--max-steps 30 --seed 1 --checkpoint-every 10");
  ASSERT_EQ(b.status, 0) << b.err;
  const std::string a_run = run_of_step(d, 60), b_run = run_of_step(d, 10);
  ASSERT_FALSE(a_run.empty()) << testutil::run("ls " + d).out;
  ASSERT_FALSE(b_run.empty()) << "pruning deleted the new run's own files:\n" << testutil::run("ls " + d).out;
  EXPECT_NE(a_run, b_run);
  EXPECT_NE(b.err.find("train: run " + b_run + ": checkpoints go to " + d + "/ckpt-" + b_run + "-<step>.bin"),
            std::string::npos)
      << b.err;
  std::vector<std::string> want = {"ckpt-" + a_run + "-000000000020.bin", "ckpt-" + a_run + "-000000000040.bin",
                                   "ckpt-" + a_run + "-000000000060.bin", "ckpt-" + b_run + "-000000000010.bin",
                                   "ckpt-" + b_run + "-000000000020.bin", "ckpt-" + b_run + "-000000000030.bin"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names_in(d), want) << "each run keeps its own three";
  for (int step : {20, 40, 60})
    EXPECT_EQ(decode_checkpoint(testutil::read_file(file_of(d, a_run, step)), Net::kNumParams).seed, 42);

  // --seed 1 --resume continues run B's step 30 (not A's newer step 60), as run B, bit for bit.
  auto ref = testutil::run(
      testutil::train_bin() + " --threads 1 --epochs 1 --max-steps 40 --seed 1 --dump-params " + top + "/ref.bin", 300);
  ASSERT_EQ(ref.status, 0) << ref.err;
  auto r = train(d, "--max-steps 40 --seed 1 --checkpoint-every 10 --resume --dump-params " + top + "/b.bin");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("train: resuming from " + file_of(d, b_run, 30) + " (epoch 1, batch 30, step 30), run " + b_run),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("train: not resuming from the newer " + file_of(d, a_run, 60) +
                       ": it was written with --seed 42, this run has --seed 1"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(testutil::read_file(top + "/b.bin") == testutil::read_file(top + "/ref.bin"))
      << "the resumed seed-1 run differs from an uninterrupted one";
  // Both runs now have a step 40 (A's and the resumed B's): the resumed run's is B's, under B's id.
  EXPECT_EQ(::access(file_of(d, b_run, 40).c_str(), F_OK), 0) << "the resumed run keeps its run id:\n"
                                                              << testutil::run("ls " + d).out;
  EXPECT_EQ(names_in(d).size(), 6u) << testutil::run("ls " + d).out;  // B pruned its own step 10
  EXPECT_EQ(::access(file_of(d, b_run, 10).c_str(), F_OK), -1);
  for (int step : {20, 40, 60}) EXPECT_EQ(::access(file_of(d, a_run, step).c_str(), F_OK), 0) << "A's step " << step;

  // And run A (seed 42) resumes its own newest.
  auto a = train(d, "--max-steps 61 --resume");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.err.find("train: resuming from " + file_of(d, a_run, 60) + " (epoch 1, batch 60, step 60), run " + a_run),
            std::string::npos)
      << a.err;
  std::system(("rm -rf '" + top + "'").c_str());
}

// Each setting that changes the numbers is refused by name before training; --resume-any-config
// continues the checkpoint as a new run, saying what changed, and leaves the old run's files.
TEST(CheckpointRuns, ChangedLrMomentumOrBatchSizeIsRefusedNamingItUnlessAllowed) {
  require_data();
  const std::string top = testutil::make_temp_dir("ckruns"), base = top + "/base";
  ASSERT_EQ(train(base, "--max-steps 4 --checkpoint-every 2").status, 0);
  const std::string run = run_of_step(base, 4);
  ASSERT_FALSE(run.empty());
  struct Case {
    std::string flag, was, now, moved;
  };
  for (const Case& c :
       {Case{"--lr 0.02", "--lr 0.01", "--lr 0.02", ""}, Case{"--momentum 0.9", "--momentum 0.5", "--momentum 0.9", ""},
        Case{"--batch-size 32", "--batch-size 64", "--batch-size 32",
             "; batch 4 of --batch-size 64 continues at batch 8 of --batch-size 32"}}) {
    const std::string d = top + "/" + c.flag.substr(2, c.flag.find(' ') - 2);
    testutil::run("cp -r " + base + " " + d);
    const std::string f = file_of(d, run, 4);
    auto no = train(d, "--max-steps 6 --resume " + c.flag);
    EXPECT_EQ(no.status, 1) << c.flag << ": " << no.err;
    EXPECT_EQ(no.err, "train: error: checkpoint " + f + " was written with " + c.was + ", this run has " + c.now +
                          " (resume needs the same configuration; --resume-any-config continues it anyway)\n");
    EXPECT_TRUE(one_line(no.err)) << no.err;
    EXPECT_EQ(no.out.find("Train Epoch"), std::string::npos) << c.flag << ": trained before refusing";
    auto yes = train(d, "--max-steps 6 --checkpoint-every 6 --resume --resume-any-config " + c.flag);
    ASSERT_EQ(yes.status, 0) << c.flag << ": " << yes.err;
    const std::string fresh = run_of_step(d, 6);
    EXPECT_FALSE(fresh.empty() || fresh == run) << "a changed configuration is a new run: " << fresh;
    EXPECT_NE(yes.err.find("train: --resume-any-config: continuing " + f + " with " + c.now + " instead of " + c.was +
                           " as new run " + fresh + c.moved + "\n"),
              std::string::npos)
        << yes.err;
    EXPECT_EQ(::access(file_of(d, run, 2).c_str(), F_OK), 0) << "the old run's files stay";
    EXPECT_EQ(::access(f.c_str(), F_OK), 0);
  }
  // Usage: the flag means nothing without --resume.
  auto usage = testutil::run(testutil::train_bin() + " --resume-any-config --checkpoint-dir " + base, 60);
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("train: error: --resume-any-config needs --resume"), std::string::npos) << usage.err;
  std::system(("rm -rf '" + top + "'").c_str());
}

// A version 3 checkpoint (an older baresgd's ckpt-<step>.bin, no run and no configuration block)
// still resumes, bit for bit, and says its run and most settings are unknown.
TEST(CheckpointRuns, Version3CheckpointStillResumesItsRunUnknown) {
  require_data();
  const std::string top = testutil::make_temp_dir("ckruns"), d = top + "/D", old = top + "/old";
  ASSERT_EQ(train(d, "--max-steps 4 --checkpoint-every 4").status, 0);
  const TrainState st = decode_checkpoint(testutil::read_file(file_of(d, run_of_step(d, 4), 4)), Net::kNumParams);
  testutil::run("mkdir -p " + old);
  const std::string v3 = old + "/ckpt-000000000004.bin";
  testutil::write_file(v3, testutil::encode_checkpoint_v3(st));
  auto ref = testutil::run(
      testutil::train_bin() + " --threads 1 --epochs 1 --max-steps 8 --dump-params " + top + "/ref.bin", 300);
  ASSERT_EQ(ref.status, 0) << ref.err;
  auto r = train(old, "--max-steps 8 --checkpoint-every 8 --resume --dump-params " + top + "/res.bin");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string fresh = run_of_step(old, 8);
  ASSERT_FALSE(fresh.empty()) << testutil::run("ls " + old).out;
  EXPECT_NE(r.err.find("train: resuming from " + v3 + " (epoch 1, batch 4, step 4), run unknown\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("train: " + v3 +
                       " is a version 3 checkpoint: it records no run id and no --lr, --momentum, "
                       "dropout or averaging options (only world size, --batch-size and --seed were compared); "
                       "this run continues as run " +
                       fresh + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(testutil::read_file(top + "/res.bin") == testutil::read_file(top + "/ref.bin"));
  EXPECT_EQ(::access(v3.c_str(), F_OK), 0) << "another run's (unknown) file is never pruned";
  // Another seed is still refused from a version 3 file.
  auto seed = train(old, "--max-steps 8 --seed 1 --resume");
  EXPECT_EQ(seed.status, 1);
  EXPECT_NE(seed.err.find("was written with --seed 42, this run has --seed 1 (resume needs the same configuration"),
            std::string::npos)
      << seed.err;
  std::system(("rm -rf '" + top + "'").c_str());
}

// A configuration block that does not parse (CRC made valid again: a bad writer, not a torn
// write) is named with the file and skipped; the run resumes from the file before it.
TEST(CheckpointRuns, CorruptConfigBlockIsNamedAndSkipped) {
  require_data();
  const std::string top = testutil::make_temp_dir("ckruns"), d = top + "/D";
  ASSERT_EQ(train(d, "--max-steps 4 --checkpoint-every 2").status, 0);
  const std::string run = run_of_step(d, 4), f = file_of(d, run, 4);
  std::string bytes = testutil::read_file(f);
  const size_t lr = bytes.find("\nlr 0.01\n");
  ASSERT_NE(lr, std::string::npos);
  bytes[lr + 7] = 'x';  // "lr 0.0x"
  const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), uInt(bytes.size() - 4)));
  std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
  testutil::write_file(f, bytes);
  auto r = train(d, "--max-steps 6 --resume");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("train: warning: " + f + ": config block: lr '0.0x' is not a finite number >= 0; skipping it\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("train: resuming from " + file_of(d, run, 2) + " (epoch 1, batch 2, step 2), run " + run),
            std::string::npos)
      << r.err;
  std::system(("rm -rf '" + top + "'").c_str());
}

}  // namespace
