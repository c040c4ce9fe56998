// test_memory_bounds: what a rank allocates is bounded by what its data can fill (issue 11,
// memory): --batch-size 1000000 allocates batch buffers for the shard, not for a million samples;
// a batch whose buffers cannot fit under the address-space limit is refused naming what it needs;
// a .gz MNIST file stops inflating as soon as its header, or the size it announces, says it is
// wrong (two gzip bombs of 1 GiB of zeros, made here). Each ./train runs under an RLIMIT_AS so
// that a regression fails the test instead of exhausting the machine; its peak RSS comes from
// wait4 (memory bounds, never timings).
#include <gtest/gtest.h>

#include <cstdlib>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/fault_harness.h"
#include "tests/test_util.h"

namespace {

struct Bounded {
  int status = -1;  // exit code, 128 + signal, or -1 when it timed out
  long long max_rss_kib = 0;
  std::string out, err;
};

// Runs argv with RLIMIT_AS = limit bytes under GNU time (its %M: argv's own peak RSS; wait4's
// ru_maxrss of a child forked from this test process would count the test process's pages the
// child held before its exec), stdout/stderr to files in dir; kills its process group (by pid)
// after timeout_s.
Bounded run_bounded(const std::vector<std::string>& argv, uint64_t limit, const std::string& dir,
                    double timeout_s = 120) {
  const std::string out = dir + "/out.txt", err = dir + "/err.txt", rss = dir + "/rss.txt";
  std::vector<std::string> timed = {"/usr/bin/time", "-f", "%M", "-o", rss};
  timed.insert(timed.end(), argv.begin(), argv.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    struct rlimit r = {rlim_t(limit), rlim_t(limit)};
    ::setrlimit(RLIMIT_AS, &r);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
              e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> a;
    for (const auto& s : timed) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  Bounded b;
  int st = 0;
  struct rusage ru {};
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const pid_t w = ::wait4(pid, &st, WNOHANG, &ru);
    if (w == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::wait4(pid, &st, 0, &ru);
      b.max_rss_kib = std::atoll(testutil::read_file(rss).c_str());
      return b;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  b.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  // GNU time writes "Command exited with non-zero status N" before %M for a failing command.
  const std::string rss_text = testutil::read_file(rss);
  const size_t last = rss_text.find_last_of("\n", rss_text.size() >= 2 ? rss_text.size() - 2 : 0);
  b.max_rss_kib = std::atoll(rss_text.c_str() + (last == std::string::npos ? 0 : last + 1));
  EXPECT_GT(b.max_rss_kib, 0) << "no peak RSS from /usr/bin/time: " << rss_text;
  b.out = testutil::read_file(out);
  b.err = testutil::read_file(err);
  return b;
}

std::vector<std::string> train_args(const std::string& data, const std::string& batch) {
  return {testutil::train_bin(), "--threads", "1", "--max-steps", "1", "--batch-size", batch, "--data-dir", data};
}

// path.gz: head, then `zeros` zero bytes, deflated as it goes (a few MiB on disk).
void write_gzip_bomb(const std::string& path, const std::string& head, uint64_t zeros) {
  gzFile g = gzopen(path.c_str(), "wb1");
  ASSERT_NE(g, nullptr) << path;
  gzwrite(g, head.data(), unsigned(head.size()));
  const std::string chunk(1 << 20, '\0');
  for (uint64_t done = 0; done < zeros; done += chunk.size()) gzwrite(g, chunk.data(), unsigned(chunk.size()));
  ASSERT_EQ(gzclose(g), Z_OK);
}

// A data dir whose train images are a gzip bomb behind `head`; the other three files are good.
std::string bomb_dir(const std::string& top, const std::string& head) {
  const std::string d = top + "/data";
  testutil::run("mkdir -p " + d);
  write_gzip_bomb(d + "/train-images-idx3-ubyte.gz", head, uint64_t(1) << 30);
  testutil::write_file(d + "/train-labels-idx1-ubyte", testutil::idx_labels(1));
  testutil::write_file(d + "/t10k-images-idx3-ubyte", testutil::idx_images(1));
  testutil::write_file(d + "/t10k-labels-idx1-ubyte", testutil::idx_labels(1));
  return d;
}

std::string idx_header(uint32_t n, uint32_t rows, uint32_t cols) {
  return testutil::be32(0x803) + testutil::be32(n) + testutil::be32(rows) + testutil::be32(cols);
}

constexpr uint64_t kGiB = uint64_t(1) << 30;

// ./train --batch-size 64 under a 3 GiB address-space limit on a gzip bomb (bomb_dir) whose images
// file starts with header; *d gets the data directory.
Bounded run_on_bomb(const std::string& top, const std::string& header, std::string* d) {
  *d = bomb_dir(top, header);
  return run_bounded(train_args(*d, "64"), 3 * kGiB, top);
}

TEST(MemoryBounds, HugeBatchSizeAllocatesOnlyWhatTheDataSetFills) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string top = testutil::make_temp_dir("membatch");
  faultharness::write_mnist_subset(top + "/data", 2000, 500);
  // Before: buffers for 1,000,000 samples (24 GB; here bad_alloc under the 2 GiB limit).
  const Bounded r = run_bounded(train_args(top + "/data", "1000000"), 2 * kGiB, top);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Train Epoch: 1 [0/2000 (0%)]"), std::string::npos) << r.out;
  EXPECT_LT(r.max_rss_kib, 200 * 1024) << "peak RSS " << r.max_rss_kib << " KiB for a 2000-sample data set";
  std::cerr << "[ sample ] --batch-size 1000000 on 2000 samples: peak RSS " << r.max_rss_kib / 1024 << " MiB\n";
  std::system(("rm -rf '" + top + "'").c_str());
}

TEST(MemoryBounds, BatchThatCannotFitIsRefusedWithWhatItNeeds) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string top = testutil::make_temp_dir("membatch");
  faultharness::write_mnist_subset(top + "/data", 16000, 500);
  const Bounded r = run_bounded(train_args(top + "/data", "16000"), 320 << 20, top);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_EQ(r.err.rfind("train: error: --batch-size 16000 needs 3", 0), 0u) << r.err;  // ~390 MiB
  EXPECT_NE(r.err.find(" MiB of batch buffers on this rank (16000 samples, 1 compute thread), more than the "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(ulimit -v 320.0 MiB ("), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos) << r.out;
  std::system(("rm -rf '" + top + "'").c_str());
}

// A header announcing 4096x4096 images, then 1 GiB of zeros: refused from the header alone.
TEST(MemoryBounds, GzipBombIsRefusedFromItsHeaderBeforeItInflates) {
  const std::string top = testutil::make_temp_dir("membomb");
  std::string d;
  const Bounded r = run_on_bomb(top, idx_header(1, 4096, 4096), &d);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err, "train: error: " + d +
                       "/train-images-idx3-ubyte.gz: wrong image size 4096x4096 (MNIST images are 28x28)\n");
  EXPECT_LT(r.max_rss_kib, 100 * 1024) << "peak RSS " << r.max_rss_kib << " KiB: the bomb was inflated";
  std::system(("rm -rf '" + top + "'").c_str());
}

// A good header for one image, then 1 GiB of zeros: inflation stops past the announced 800 bytes.
TEST(MemoryBounds, GzipPastItsAnnouncedSizeStopsThere) {
  const std::string top = testutil::make_temp_dir("membomb");
  std::string d;
  const Bounded r = run_on_bomb(top, idx_header(1, 28, 28), &d);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err,
            "train: error: " + d + "/train-images-idx3-ubyte.gz: inflates past the 800 bytes its header announces\n");
  EXPECT_LT(r.max_rss_kib, 100 * 1024) << "peak RSS " << r.max_rss_kib << " KiB: the bomb was inflated";
  std::system(("rm -rf '" + top + "'").c_str());
}

}  // namespace
