// test_hardening: the programs against files another local user planted or that cannot be read
// safely (issue: "a thousand ranks, and no stranger can break a job", its cases 6 to 8): the
// launcher's --output-filename and --hostfile, the trainer's checkpoints, data files, --resume
// with nothing usable and --timeline-steps alone. Each case runs the real binary and checks its
// one line and its exit; a target a symlink points at is checked unchanged. Files planted as
// another user are chowned to nobody (uid 65534), which needs root, as CI runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

constexpr uid_t kNobody = 65534;

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The number of lines of s (stderr's lines: an error is one).
int lines_in(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n + (!s.empty() && s.back() != '\n');
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A world-writable sticky directory as /tmp is, owned by root, for planting.
std::string sticky_dir(const std::string& tag) {
  const std::string d = testutil::make_temp_dir(tag) + "/tmp";
  EXPECT_EQ(::mkdir(d.c_str(), 0700), 0);
  EXPECT_EQ(::chmod(d.c_str(), 01777), 0);
  return d;
}

}  // namespace

TEST(Hardening, HostfileThatIsADeviceOrAFifoIsNamedNotRead) {
  const std::string dir = testutil::make_temp_dir("hostfile");
  const std::string fifo = dir + "/hosts";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/zero"), fifo}) {
    auto r = testutil::run(testutil::launch_bin() + " -np 1 --gloo --hostfile " + path + " true", 60);
    ASSERT_FALSE(r.timed_out) << path << " blocked the launcher";
    EXPECT_NE(r.status, 0) << r.err;
    const std::string kind = path == fifo ? "a FIFO" : "a character device";
    EXPECT_TRUE(has(r.err, path + ": --hostfile is " + kind + ", not a regular file")) << r.err;
    EXPECT_EQ(lines_in(r.err), 1) << r.err;
  }
}

TEST(Hardening, OutputFilenameNeverFollowsAnotherUsersSymlink) {
  if (::geteuid() != 0) BARESGD_SKIP("needs root to plant files as another user");
  const std::string tmp = sticky_dir("outlink");
  const std::string victim = testutil::make_temp_dir("victim") + "/root-owned";
  testutil::write_file(victim, "root's data\n");
  // nobody prepares the rank directory root's launcher will write into, with a symlink as stdout.
  const std::string out = tmp + "/out", rank_dir = out + "/rank.0";
  ASSERT_EQ(::mkdir(out.c_str(), 0777), 0);
  ASSERT_EQ(::mkdir(rank_dir.c_str(), 0777), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (rank_dir + "/stdout").c_str()), 0);
  for (const std::string& p : {out, rank_dir}) ASSERT_EQ(::chown(p.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::lchown((rank_dir + "/stdout").c_str(), kNobody, kNobody), 0);
  auto r = testutil::run(testutil::launch_bin() + " -np 1 --gloo --output-filename " + out + " echo overwritten", 60);
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, out + ": --output-filename directory is owned by another user (uid 65534)")) << r.err;
  EXPECT_EQ(testutil::read_file(victim), "root's data\n");
  // In a directory of its own the symlink alone is refused as well.
  const std::string mine = testutil::make_temp_dir("outmine");
  ASSERT_EQ(::mkdir((mine + "/rank.0").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (mine + "/rank.0/stdout").c_str()), 0);
  auto again = testutil::run(testutil::launch_bin() + " -np 1 --gloo --output-filename " + mine + " echo x", 60);
  EXPECT_NE(again.status, 0) << again.err;
  EXPECT_TRUE(has(again.err, mine + "/rank.0/stdout: --output-filename file is a symlink; refusing to follow it"))
      << again.err;
  EXPECT_EQ(testutil::read_file(victim), "root's data\n");
}

TEST(Hardening, CheckpointsThatAreDevicesFifosOrGiantsAreNamedAndResumeFails) {
  const std::string dir = testutil::make_temp_dir("ckbad");
  const std::string zero = dir + "/ckpt-0123456789abcdef-000000000009.bin";
  const std::string fifo = dir + "/ckpt-0123456789abcdef-000000000008.bin";
  const std::string giant = dir + "/ckpt-0123456789abcdef-000000000007.bin";
  ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A 3 GB sparse file with a valid magic and a world size of 1: refused by its size, unread.
  testutil::write_file(giant, std::string("BARESGD\0", 8) + std::string("\4\0\0\0\1\0\0\0", 8));
  ASSERT_EQ(::truncate(giant.c_str(), 3LL << 30), 0);
  const std::string train = testutil::train_bin() + " --threads 1 --max-steps 1 --resume --checkpoint-dir " + dir;
  auto r = testutil::run(train, 120);
  ASSERT_FALSE(r.timed_out) << "a FIFO checkpoint blocked the trainer";
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, zero + ": checkpoint is a character device, not a regular file; skipping it")) << r.err;
  EXPECT_TRUE(has(r.err, fifo + ": checkpoint is a FIFO, not a regular file; skipping it")) << r.err;
  EXPECT_TRUE(has(r.err, giant + ": checkpoint is 3221225472 bytes, more than the ")) << r.err;
  EXPECT_TRUE(has(r.err, "train: --resume: none of the 3 checkpoint file(s) in " + dir +
                             " is usable (see the warnings above); pass --resume-fresh to start from the beginning "
                             "anyway"))
      << r.err;
  EXPECT_FALSE(has(r.out, "Train Epoch")) << r.out;
  auto fresh = testutil::run(train + " --resume-fresh", 120);
  EXPECT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_TRUE(has(fresh.err, "train: no usable checkpoint in " + dir + "; starting from the beginning")) << fresh.err;
  std::system(("rm -rf " + quoted(dir)).c_str());
}

TEST(Hardening, ResumeFreshNeedsResume) {
  auto r = testutil::run(testutil::train_bin() + " --resume-fresh", 60);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--resume-fresh needs --resume")) << r.err;
}

TEST(Hardening, CheckpointDirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) BARESGD_SKIP("needs root to plant files as another user");
  const std::string dir = testutil::make_temp_dir("ckowner") + "/theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  auto r = testutil::run(testutil::train_bin() + " --threads 1 --max-steps 1 --checkpoint-dir " + dir, 120);
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, dir + ": --checkpoint-dir directory is owned by another user (uid 65534); refusing to "
                               "write there"))
      << r.err;
  EXPECT_FALSE(has(r.out, "Train Epoch")) << r.out;
}

TEST(Hardening, TimelineStepsWithoutATimelineIsRefused) {
  auto r =
      testutil::run("env -u HOROVOD_TIMELINE " + testutil::train_bin() + " --max-steps 1 --timeline-steps 0-3", 60);
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "--timeline-steps needs --timeline FILE (or HOROVOD_TIMELINE=FILE): nothing is recorded"))
      << r.err;
  EXPECT_FALSE(has(r.out, "Train Epoch")) << r.out;
}

TEST(Hardening, ADataFileThatIsAFifoOrADirectoryIsNamedAsWhatItIs) {
  const std::string dir = testutil::make_temp_dir("datakind");
  const std::string raw = dir + "/MNIST/raw";
  ASSERT_EQ(std::system(
                ("mkdir -p " + quoted(raw) + " && cp data/MNIST/raw/*labels* data/MNIST/raw/t10k* " + quoted(raw) + "/")
                    .c_str()),
            0);
  const std::string images = raw + "/train-images-idx3-ubyte";
  ASSERT_EQ(::mkfifo(images.c_str(), 0600), 0);
  auto fifo = testutil::run(testutil::train_bin() + " --max-steps 1 --data-dir " + dir, 60);
  ASSERT_FALSE(fifo.timed_out) << "a FIFO data file blocked the trainer";
  EXPECT_NE(fifo.status, 0) << fifo.err;
  EXPECT_TRUE(has(fifo.err, images + ": MNIST file is a FIFO, not a regular file")) << fifo.err;
  ASSERT_EQ(::unlink(images.c_str()), 0);
  ASSERT_EQ(::mkdir(images.c_str(), 0755), 0);
  auto directory = testutil::run(testutil::train_bin() + " --max-steps 1 --data-dir " + dir, 60);
  EXPECT_NE(directory.status, 0) << directory.err;
  EXPECT_TRUE(has(directory.err, images + ": MNIST file is a directory, not a regular file")) << directory.err;
  std::system(("rm -rf " + quoted(dir)).c_str());
}
