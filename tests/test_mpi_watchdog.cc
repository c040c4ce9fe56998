// test_mpi_watchdog: --comm-timeout under --mpi. The collective watchdog itself (CollectiveWatchdog:
// fires once for a call open past its deadline, with its name; never for calls that end), the
// launcher's one line from the ranks' timeout lines (MpiTimeoutReport), and end to end
// (MpiFaults): a rank SIGSTOPped mid-training in a `./launch --mpi` job with --comm-timeout 3 ends
// the job with the ranks' lines and the launcher's line naming the stopped rank, a non-zero exit,
// and no process of the job left (mpirun, its ranks, the stopped one).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "comm/collective_watchdog.h"
#include "launcher/mpi_timeout_report.h"
#include "tests/fault_harness.h"
#include "tests/marked_job_test.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

// ---- CollectiveWatchdog ------------------------------------------------------------------------

// What the callback saw; waits for it by state, not by time.
struct Fired {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  std::string name;
  double seconds = 0, late = 0;
  CollectiveWatchdog::Expired callback() {
    return [this](const std::string& n, double s, double l) {
      std::lock_guard<std::mutex> lock(mu);
      ++count;
      name = n;
      seconds = s;
      late = l;
      cv.notify_all();
    };
  }
  bool wait(double timeout_s) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return count > 0; });
  }
};

TEST(CollectiveWatchdog, ACallOpenPastItsDeadlineIsNamedWithHowLongItRan) {
  Fired f;
  CollectiveWatchdog w(std::chrono::milliseconds(500), f.callback());
  w.begin("MPI_Barrier");
  w.end();
  w.begin("MPI_Allreduce");  // never ends
  ASSERT_TRUE(f.wait(60)) << "the watchdog never fired";
  std::lock_guard<std::mutex> lock(f.mu);
  EXPECT_EQ(f.count, 1);
  EXPECT_EQ(f.name, "MPI_Allreduce");
  EXPECT_GE(f.seconds, 0.5);  // measured from the open call's start, not the first's
  EXPECT_GE(f.late, 0.0);
  EXPECT_EQ(w.calls(), 2u);
}

TEST(CollectiveWatchdog, CallsThatEndNeverFire) {
  Fired f;
  {
    // A deadline no call comes near, even descheduled on a loaded machine; the destructor wakes
    // the thread, so the test does not wait for it.
    CollectiveWatchdog w(std::chrono::seconds(10), f.callback());
    for (int i = 0; i < 20000; ++i) {
      WatchedCall c(&w, "MPI_Allreduce");
    }
    EXPECT_EQ(w.calls(), 20000u);
  }  // joined here: nothing can fire after this
  EXPECT_EQ(f.count, 0) << f.name;
}

TEST(CollectiveWatchdog, ANullWatchdogBracketsNothing) {
  WatchedCall c(nullptr, "MPI_Barrier");  // must not crash
  SUCCEED();
}

// ---- MpiTimeoutReport --------------------------------------------------------------------------

const char kWaited[] =
    "train: error: rank 0 (host vm): MPI_Allreduce timed out after 3.0 s (--comm-timeout 3.0 s) waiting for a peer "
    "(a blocking MPI collective does not say which); ending the job with MPI_Abort";
const char kStopped[] =
    "train: error: rank 2 (host vm): MPI_Allreduce timed out after 4.1 s (--comm-timeout 3.0 s), but its watchdog "
    "woke 1.1 s late: this rank itself was stopped or starved; ending the job with MPI_Abort";

TEST(MpiTimeoutReport, ClassifiesTheRanksLines) {
  EXPECT_EQ(classify_mpi_timeout_line(kWaited), MpiTimeoutLine::kWaited);
  EXPECT_EQ(classify_mpi_timeout_line(kStopped), MpiTimeoutLine::kStopped);
  EXPECT_EQ(classify_mpi_timeout_line("Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.3"), MpiTimeoutLine::kNone);
  EXPECT_EQ(classify_mpi_timeout_line("train: error: rank 1: gloo allreduce timed out after 5 s waiting for rank 2"),
            MpiTimeoutLine::kNone);
}

TEST(MpiTimeoutReport, NamesTheRanksThatNeverReportedAndTheStoppedOnes) {
  MpiTimeoutReports r;
  EXPECT_EQ(mpi_timeout_summary(r, 3, "exited with status 1"), "");
  r.add(1, kWaited);
  r.add(0, kWaited);
  r.add(0, "something else");
  EXPECT_EQ(mpi_timeout_summary(r, 3, "exited with status 1"),
            "launch: a collective timed out (--comm-timeout): ranks 0, 1 waited for a peer; rank 2 never reported "
            "(stopped or stalled); mpirun exited with status 1");
  r.add(2, kStopped);
  EXPECT_EQ(mpi_timeout_summary(r, 4, "exited with status 1"),
            "launch: a collective timed out (--comm-timeout): ranks 0, 1 waited for a peer; rank 2 had been stopped "
            "(its own watchdog woke late); rank 3 never reported (stopped or stalled); mpirun exited with status 1");
  MpiTimeoutReports all;
  all.add(0, kWaited);
  all.add(1, kWaited);
  EXPECT_EQ(mpi_timeout_summary(all, 2, "exited with status 1"),
            "launch: a collective timed out (--comm-timeout): ranks 0, 1 waited for a peer; every rank waited (no rank "
            "is named); mpirun exited with status 1");
}

// ---- MpiFaults: end to end ---------------------------------------------------------------------

// A marked job (tests/marked_job_test.h) whose mpirun may take longer to go after the kill.
class MpiFaults : public MarkedJobTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    teardown_wait_s_ = 30;
    MarkedJobTest::SetUp();
  }
};

// The ranks of an --mpi job carrying marker: OMPI_COMM_WORLD_RANK -> pid.
std::map<int, pid_t> mpi_rank_pids(const std::string& marker) {
  std::map<int, pid_t> out;
  for (pid_t p : procs_with(marker)) {
    const std::string env = read_file("/proc/" + std::to_string(p) + "/environ");
    const std::string key = std::string(1, '\0') + "OMPI_COMM_WORLD_RANK=";
    const size_t at = env.find(key);
    if (at != std::string::npos) out[std::atoi(env.c_str() + at + key.size())] = p;
  }
  return out;
}

// Rank 2 of 3 is stopped once every rank trains. The others' watchdogs fire after --comm-timeout
// 3, each prints its line, MPI_Abort ends the job; the launcher names rank 2 in one line and exits
// non-zero; mpirun and every rank (the stopped one too) are gone.
TEST_F(MpiFaults, SigstopOfARankEndsTheJobNamingItWithinCommTimeout) {
  const std::string data = dir_ + "/data";
  link_real_mnist(data);
  Proc job({launch_, "-np", "3", "--mpi", "--network-interface", "lo", train_, "--comm-timeout", "3", "--epochs", "50",
            "--log-interval", "10", "--data-dir", data});
  for (int r = 0; r < 3; ++r) {
    std::regex line("\\[" + std::to_string(r) + "\\]<stdout>:Train Epoch: 1 \\[[1-9]");
    ASSERT_GE(job.wait_for(line, 180, false, Clock::now()), 0) << job.out() << job.err();
  }
  auto ranks = mpi_rank_pids(marker_);
  ASSERT_EQ(ranks.size(), 3u) << "rank processes of " << marker_;
  std::vector<pid_t> mpiruns;
  for (pid_t p : procs_with(marker_))
    if (read_file("/proc/" + std::to_string(p) + "/comm") == "mpirun\n") mpiruns.push_back(p);
  ASSERT_EQ(mpiruns.size(), 1u) << "mpirun of " << marker_;
  const pid_t stopped = ranks[2];
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  for (auto t = Clock::now(); proc_state(stopped) != 'T' && secs_since(t) < 30;) ::usleep(5 * 1000);
  ASSERT_EQ(proc_state(stopped), 'T');
  const auto t0 = Clock::now();

  const int code = job.code(180);
  const double exit_s = secs_since(t0);
  const std::string err = job.err();
  EXPECT_NE(code, -1) << "the job hung:\n" << err;
  EXPECT_EQ(code, 1) << err;  // MPI_Abort's error code, mpirun's status
  EXPECT_GE(exit_s, 3.0) << err;
  // A live rank's line: this rank, the operation, how long, the timeout.
  EXPECT_TRUE(std::regex_search(
      err, std::regex("\\[[01]\\]<stderr>:train: error: rank [01] \\(host [^)]*\\): MPI_[A-Za-z]+[^\n]* timed out "
                      "after [0-9]+\\.[0-9] s \\(--comm-timeout 3\\.0 s\\)[^\n]*; ending the job with MPI_Abort\n")))
      << err;
  // The launcher's one line names rank 2, as stopped or as never reporting, and no live rank.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex("launch: a collective timed out \\(--comm-timeout\\): [^\n]*\n")))
      << err;
  const std::string line = m.str();
  EXPECT_TRUE(contains(line, "; rank 2 never reported (stopped or stalled)") ||
              contains(line, "; rank 2 had been stopped (its own watchdog woke late)"))
      << line;
  EXPECT_FALSE(std::regex_search(line, std::regex("rank [01] (never|had)"))) << line;
  EXPECT_TRUE(contains(line, "; mpirun exited with status 1")) << line;
  // Nothing of the job is left: mpirun, its ranks, the stopped one.
  EXPECT_GE(wait_no_procs(marker_, 30), 0) << "left running after the launcher exited";
  EXPECT_NE(proc_state(stopped), 'T') << "the stopped rank survived";
  for (pid_t p : mpiruns) EXPECT_NE(::kill(p, 0), 0) << "mpirun " << p << " survived";
  std::cerr << "[ timing ] --mpi, SIGSTOP of rank 2 of 3, --comm-timeout 3: launcher exit " << code << " after "
            << exit_s << " s\n";
  for (const std::string& l : lines_of(err))
    if (contains(l, "error") || contains(l, "launch:")) std::cerr << "[ sample ] " << l << "\n";
}

}  // namespace
