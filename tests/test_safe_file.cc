// test_safe_file: src/safe_file's rules on real files: reads take regular files only and check the
// size first (a FIFO never blocks, /dev/zero and a sparse giant are named, not read); writes never
// follow a symlink, never truncate another user's file, and refuse a directory another user can
// write unless it is sticky. The tests that plant files as another user run as root (as CI does)
// and chown to nobody (uid 65534), as an attacker's files would be.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

#include "src/safe_file.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

constexpr uid_t kNobody = 65534;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SafeFileError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

TEST(SafeFile, UnsafeDirReasonFollowsTheRule) {
  EXPECT_EQ(unsafe_dir_reason(1000, S_IFDIR | 0755, 1000), "");
  EXPECT_EQ(unsafe_dir_reason(0, S_IFDIR | 0755, 1000), "");      // root's directory
  EXPECT_EQ(unsafe_dir_reason(0, S_IFDIR | 01777, 1000), "");     // /tmp: sticky, root's
  EXPECT_EQ(unsafe_dir_reason(1000, S_IFDIR | 01777, 1000), "");  // sticky, the caller's
  EXPECT_EQ(unsafe_dir_reason(1000, S_IFDIR | 0777, 1000), "is writable by other users (mode 0777) and not sticky");
  EXPECT_EQ(unsafe_dir_reason(1000, S_IFDIR | 0775, 1000), "is writable by other users (mode 0775) and not sticky");
  EXPECT_EQ(unsafe_dir_reason(2000, S_IFDIR | 0755, 1000), "is owned by another user (uid 2000)");
  EXPECT_EQ(unsafe_dir_reason(2000, S_IFDIR | 01777, 1000), "is owned by another user (uid 2000)");
}

TEST(SafeFile, ReadNamesAFifoWithoutBlocking) {
  const std::string dir = testutil::make_temp_dir("safe-fifo");
  const std::string fifo = dir + "/hosts";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opened O_NONBLOCK: returns at once with no writer; a blocking open would hang this test.
  EXPECT_EQ(error_of([&] { read_regular_file(fifo, 1 << 20, "--hostfile"); }),
            fifo + ": --hostfile is a FIFO, not a regular file");
}

TEST(SafeFile, ReadNamesADirectoryAndADevice) {
  const std::string dir = testutil::make_temp_dir("safe-dir");
  EXPECT_EQ(error_of([&] { read_regular_file(dir, 100, "checkpoint"); }),
            dir + ": checkpoint is a directory, not a regular file");
  const std::string link = dir + "/zero";
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_EQ(error_of([&] { read_regular_file(link, 100, "checkpoint"); }),
            link + ": checkpoint is a character device, not a regular file");
}

TEST(SafeFile, ReadRefusesASparseGiantBeforeReadingIt) {
  const std::string dir = testutil::make_temp_dir("safe-sparse");
  const std::string big = dir + "/big";
  testutil::write_file(big, "x");
  ASSERT_EQ(::truncate(big.c_str(), 3LL << 30), 0);  // 3 GiB, no blocks
  EXPECT_EQ(error_of([&] { read_regular_file(big, 1 << 20, "--hostfile"); }),
            big + ": --hostfile is 3221225472 bytes, more than the 1048576 it can be");
}

TEST(SafeFile, ReadGivesTheBytesOfARegularFile) {
  const std::string dir = testutil::make_temp_dir("safe-read");
  testutil::write_file(dir + "/f", std::string("a\0b", 3));
  EXPECT_EQ(read_regular_file(dir + "/f", 3, "file"), std::string("a\0b", 3));
  EXPECT_TRUE(has(error_of([&] { read_regular_file(dir + "/f", 2, "file"); }), "is 3 bytes, more than the 2"));
  EXPECT_TRUE(has(error_of([&] { read_regular_file(dir + "/none", 2, "file"); }),
                  dir + "/none: file cannot be opened: No such file or directory"));
}

// The non-throwing opener (for callers with their own messages, as --config-file) says which
// refusal it was, with the same words the throwing one uses.
TEST(SafeFile, TryOpenSaysWhichRefusal) {
  const std::string dir = testutil::make_temp_dir("safe-try");
  testutil::write_file(dir + "/f", "abc");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  size_t size = 0;
  ReadRefusal why;
  const int fd = try_open_regular_for_read(dir + "/f", 3, &size, &why);
  ASSERT_GE(fd, 0) << std::strerror(why.open_errno);
  ::close(fd);
  EXPECT_EQ(size, 3u);
  EXPECT_EQ(why.open_errno + why.check_errno + int(why.mode) + int(why.size), 0);
  EXPECT_EQ(try_open_regular_for_read(dir + "/none", 3, &size, &why), -1);
  EXPECT_EQ(why.open_errno, ENOENT);
  EXPECT_EQ(why.mode, 0u);
  EXPECT_EQ(try_open_regular_for_read(dir + "/fifo", 3, &size, &why), -1);
  EXPECT_EQ(file_kind(why.mode), "a FIFO");
  EXPECT_EQ(why.open_errno, 0);
  EXPECT_EQ(try_open_regular_for_read(dir + "/f", 2, &size, &why), -1);
  EXPECT_EQ(why.size, 3u);
  EXPECT_EQ(why.mode, 0u);
}

TEST(SafeFile, WriteRefusesASymlinkAndLeavesItsTargetAlone) {
  const std::string dir = testutil::make_temp_dir("safe-link");
  const std::string target = dir + "/precious", link = dir + "/out";
  testutil::write_file(target, "keep me");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(error_of([&] { create_output_file(link, "--metrics file"); }),
            link + ": --metrics file is a symlink; refusing to follow it");
  EXPECT_EQ(testutil::read_file(target), "keep me");
}

TEST(SafeFile, WriteCreatesAndTruncatesTheCallersFile) {
  const std::string dir = testutil::make_temp_dir("safe-write");
  const std::string p = dir + "/out";
  testutil::write_file(p, "old contents");
  const int fd = create_output_file(p, "file");
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "new", 3), 3);
  ::close(fd);
  EXPECT_EQ(testutil::read_file(p), "new");
  EXPECT_EQ(error_of([&] { ::close(create_temp_file(p, "temp file")); }), p + ": temp file already exists");
}

TEST(SafeFile, WriteRefusesADirectoryOthersCanWriteUnlessSticky) {
  const std::string dir = testutil::make_temp_dir("safe-perm");
  const std::string open_dir = dir + "/open", sticky = dir + "/sticky";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  EXPECT_EQ(error_of([&] { create_output_file(open_dir + "/f", "checkpoint"); }),
            open_dir +
                ": checkpoint directory is writable by other users (mode 0777) and not sticky; refusing to "
                "write there");
  ASSERT_EQ(::mkdir(sticky.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  ::close(create_output_file(sticky + "/f", "checkpoint"));  // as /tmp: fine
}

TEST(SafeFile, AsRootAnotherUsersFilesAndDirectoriesAreRefused) {
  if (::geteuid() != 0) BARESGD_SKIP("needs root to plant files as another user");
  const std::string dir = testutil::make_temp_dir("safe-owner");
  const std::string sticky = dir + "/tmp", theirs = dir + "/theirs";
  ASSERT_EQ(::mkdir(sticky.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  // nobody's file in a sticky directory, where root will write "f": never truncated, never ours.
  testutil::write_file(sticky + "/f", "nobody's");
  ASSERT_EQ(::chown((sticky + "/f").c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(error_of([&] { create_output_file(sticky + "/f", "--output-filename file"); }),
            sticky + "/f: --output-filename file is owned by another user (uid 65534)");
  EXPECT_EQ(testutil::read_file(sticky + "/f"), "nobody's");
  // nobody's directory: nobody could plant anything in it.
  ASSERT_EQ(::mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(error_of([&] { check_write_dir(theirs, "--checkpoint-dir"); }),
            theirs + ": --checkpoint-dir directory is owned by another user (uid 65534); refusing to write there");
  // nobody's symlink in the place of a directory.
  const std::string link = sticky + "/out";
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(error_of([&] { check_write_dir(link, "--output-filename"); }),
            link + ": --output-filename directory is a symlink owned by another user (uid 65534)");
}
