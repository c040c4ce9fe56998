// test_launch_local: the real ./launch end to end with ranks on this machine (LaunchLocal): tags,
// exit codes and failures, signals, orphans, the secret, the rendezvous store, --mpi locally.
//
// Env: BARESGD_LAUNCH = path of ./launch (default ./launch), BARESGD_TOOLS = directory of
// tool_launch_rank (default build/tests).
#include <gtest/gtest.h>

#include <dirent.h>

#include "tests/launch_harness.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

using namespace launchharness;  // NOLINT: the harness is these files' vocabulary

// ============================================================================================
// Integration: local ranks
// ============================================================================================

TEST_F(LaunchLocal, TagsInEveryFormat) {
  struct {
    const char* fmt;
    std::string out0, err3;
  } cases[] = {{"horovod", "[0]<stdout>:out0", "[3]<stderr>:err3"},
               {"mpi", "[1,0]<stdout>:out0", "[1,3]<stderr>:err3"},
               {"short", "[0]:out0", "[3]:err3"},
               {"host", "[localhost:0]<stdout>:out0", "[localhost:3]<stderr>:err3"}};
  for (const auto& c : cases) {
    Launch l(
        {"-np", "4", "--gloo", "--tag-format", c.fmt, "sh", "-c", "echo out$BARESGD_RANK; echo err$BARESGD_RANK >&2"});
    ASSERT_EQ(l.code(30), 0) << c.fmt << "\n" << l.err();
    auto out = split_lines(l.out()), err = split_lines(l.err());
    std::set<std::string> os(out.begin(), out.end()), es(err.begin(), err.end());
    EXPECT_EQ(out.size(), 4u) << l.out();
    EXPECT_EQ(err.size(), 4u) << l.err();
    EXPECT_TRUE(os.count(c.out0)) << c.fmt << ": " << l.out();
    EXPECT_TRUE(es.count(c.err3)) << c.fmt << ": " << l.err();
    // stdout lines only on stdout, stderr lines only on stderr.
    EXPECT_FALSE(contains(l.out(), "err")) << l.out();
    EXPECT_FALSE(contains(l.err(), "out")) << l.err();
  }
}

TEST_F(LaunchLocal, DefaultHostsAreLocalhostAndRankVariables) {
  Launch l({"-np", "3", "--gloo", "sh", "-c",
            "echo $BARESGD_RANK $BARESGD_SIZE $BARESGD_LOCAL_RANK $BARESGD_LOCAL_SIZE $BARESGD_CROSS_RANK "
            "$BARESGD_CROSS_SIZE $BARESGD_COMM $BARESGD_HOSTNAME $BARESGD_HOST_ADDR ${BARESGD_STORE_ADDR%:*} "
            "${#BARESGD_JOB_ID} $OPENBLAS_NUM_THREADS"});
  ASSERT_EQ(l.code(30), 0) << l.err();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::string blas = std::to_string(std::max(1L, cores / 3));
  for (int r = 0; r < 3; ++r) {
    std::string want = "[" + std::to_string(r) + "]<stdout>:" + std::to_string(r) + " 3 " + std::to_string(r) +
                       " 3 0 1 gloo localhost 127.0.0.1 127.0.0.1 16 " + blas;
    EXPECT_TRUE(contains(l.out(), want + "\n")) << "want " << want << "\n" << l.out();
  }
  // A user's OPENBLAS_NUM_THREADS wins.
  Launch u({"-np", "1", "--gloo", "sh", "-c", "echo $OPENBLAS_NUM_THREADS"}, {"OPENBLAS_NUM_THREADS=7"});
  ASSERT_EQ(u.code(30), 0);
  EXPECT_EQ(u.out(), "[0]<stdout>:7\n");
}

TEST_F(LaunchLocal, FloodOfLinesNoneLostSplitOrInterleaved) {
  const int kLines = 10000;
  Launch l({"-np", "4", "--gloo", rank_tool(), "lines", std::to_string(kLines), marker_});
  ASSERT_EQ(l.code(120), 0) << l.err().substr(0, 2000);
  std::cerr << "[ timing ] 4 ranks x " << kLines << " lines on each stream: " << l.elapsed() << " s\n";
  for (int stream = 0; stream < 2; ++stream) {
    std::string text = stream == 0 ? l.out() : l.err();
    const char* tag = stream == 0 ? "<stdout>:" : "<stderr>:";
    const char* word = stream == 0 ? " out " : " err ";
    auto lines = split_lines(text);
    ASSERT_EQ(lines.size(), static_cast<size_t>(4 * kLines)) << "stream " << stream;
    std::vector<int> next(4, 0);
    for (const std::string& line : lines) {
      // "[r]<stdout>:r<r> out <i> <pad> end", pad = (i % 97) x ('a' + i % 26)
      ASSERT_EQ(line[0], '[') << line;
      size_t close = line.find(']');
      ASSERT_NE(close, std::string::npos) << line;
      int r = std::stoi(line.substr(1, close - 1));
      ASSERT_TRUE(r >= 0 && r < 4) << line;
      int i = next[r]++;
      std::string pad(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
      std::string want =
          "[" + std::to_string(r) + "]" + tag + "r" + std::to_string(r) + word + std::to_string(i) + " " + pad + " end";
      ASSERT_EQ(line, want);
    }
    for (int r = 0; r < 4; ++r) EXPECT_EQ(next[r], kLines) << "rank " << r;
  }
}

TEST_F(LaunchLocal, CarriageReturnProgressAndLastLineWithoutNewline) {
  Launch l({"-np", "1", "--gloo", "sh", "-c", "printf '10%%\\r20%%\\r30%%\\r\\nfirst\\nlast'"});
  ASSERT_EQ(l.code(30), 0) << l.err();
  EXPECT_EQ(l.out(), "[0]<stdout>:10%\r[0]<stdout>:20%\r[0]<stdout>:30%\r\n[0]<stdout>:first\n[0]<stdout>:last\n");
  Launch e({"-np", "1", "--gloo", "sh", "-c", "printf 'no newline on stderr' >&2"});
  ASSERT_EQ(e.code(30), 0);
  EXPECT_EQ(e.err(), "[0]<stderr>:no newline on stderr\n");
  // A last line ended by '\r' gets a '\n' on the console (so the next line does not overwrite it).
  std::string dir = "/tmp/" + marker_ + "-cr";
  Launch c({"-np", "1", "--gloo", "--output-filename", dir, "sh", "-c", "printf 'done\\r'"});
  ASSERT_EQ(c.code(30), 0);
  EXPECT_EQ(c.out(), "[0]<stdout>:done\r\n");
  EXPECT_EQ(read_file(dir + "/rank.0/stdout"), "done\r");  // files keep the bytes
  system(("rm -rf " + dir).c_str());
}

TEST_F(LaunchLocal, BinaryAndUtf8PassThrough) {
  Launch l({"-np", "1", "--gloo", rank_tool(), "binary"});
  ASSERT_EQ(l.code(30), 0) << l.err();
  std::string bin;
  for (int b = 0; b < 256; ++b)
    if (b != '\n' && b != '\r') bin += static_cast<char>(b);
  std::string want = "[0]<stdout>:" + bin + "\n[0]<stdout>:caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n";
  EXPECT_TRUE(l.out() == want) << "got " << l.out().size() << " bytes, want " << want.size();
}

TEST_F(LaunchLocal, MegabyteLinesIntact) {
  const size_t kBytes = 3u << 20;
  Launch l({"-np", "2", "--gloo", rank_tool(), "bigline", std::to_string(kBytes)});
  ASSERT_EQ(l.code(60), 0) << l.err();
  auto lines = split_lines(l.out());
  ASSERT_EQ(lines.size(), 4u);
  int big = 0, tails = 0;
  for (const std::string& line : lines) {
    if (line.size() > kBytes) {
      ++big;
      std::string body = line.substr(line.find(':') + 1);
      ASSERT_EQ(body.size(), kBytes);
      for (size_t i = 0; i < kBytes; i += 1000) ASSERT_EQ(body[i], static_cast<char>('A' + (i / 1000) % 26)) << i;
      EXPECT_EQ(body.find_first_not_of("xABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string::npos);
    } else {
      EXPECT_TRUE(line == "[0]<stdout>:tail" || line == "[1]<stdout>:tail") << line.substr(0, 100);
      ++tails;
    }
  }
  EXPECT_EQ(big, 2);
  EXPECT_EQ(tails, 2);
}

TEST_F(LaunchLocal, RankExitCodeStopsJob) {
  // The other ranks sleep past the deadline of code(): the job ends only if the launcher stops them.
  Launch l({"-np", "4", "--gloo", "sh", "-c", "if [ $BARESGD_RANK = 3 ]; then exit 3; fi; sleep 120; : " + marker_});
  EXPECT_EQ(l.code(60), 3) << l.err();
  EXPECT_TRUE(std::regex_search(l.err(), std::regex("launch: rank 3 \\(localhost, pid \\d+\\) exited with status 3; "
                                                    "stopping the job")))
      << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0) << "leftover processes";
}

TEST_F(LaunchLocal, FirstFailureDecides) {
  // Rank 1 fails with 5 at once; rank 2 turns the SIGTERM it then gets into exit 7 (not first).
  Launch l(
      {"-np", "3", "--gloo", "sh", "-c",
       "case $BARESGD_RANK in 1) exit 5;; 2) trap 'exit 7' TERM; sleep 30 & wait;; *) sleep 30;; esac; : " + marker_});
  EXPECT_EQ(l.code(30), 5) << l.err();
  EXPECT_TRUE(contains(l.err(), "rank 1 (localhost")) << l.err();
  EXPECT_FALSE(contains(l.err(), "rank 2 (")) << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0);
}

namespace {

// The pid a rank wrote to path ("echo $$ > path"), once the whole line is there; 0 after timeout_s.
pid_t rank_pid_from(const std::string& path, double timeout_s) {
  auto t0 = Clock::now();
  for (std::string s = read_file(path); secs_since(t0) < timeout_s; s = read_file(path)) {
    if (!s.empty() && s.back() == '\n') return static_cast<pid_t>(std::atol(s.c_str()));
    usleep(10 * 1000);
  }
  return 0;
}

}  // namespace

TEST_F(LaunchLocal, KilledRankIsTheCauseWhenItsPeerDiesInTheSameInstant) {
  // Rank 1 is killed by SIGKILL and rank 0 then exits 1 (as a peer that lost its connection does);
  // the launcher is stopped meanwhile, so it finds both gone in one pass (the kernel hands them back
  // oldest first: rank 0) and the killed rank must still decide. The test drives that order: each
  // rank waits for its go file; with the launcher stopped, rank 1 goes first, rank 0 once rank 1's
  // agent has exited, and the launcher continues once both agents are zombies it has not reaped.
  const std::string d = "/tmp/" + marker_ + "-same";
  ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  Launch l({"-np", "2", "--gloo", "sh", "-c",
            "echo $$ > " + d + "/pid.$BARESGD_RANK; " + testutil::sh_wait_for(d + "/go.$BARESGD_RANK") +
                "case $BARESGD_RANK in 1) kill -9 $$;; *) exit 1;; esac; : " + marker_});
  pid_t agent[2];
  for (int r = 0; r < 2; ++r) {
    const pid_t rank = rank_pid_from(d + "/pid." + std::to_string(r), 30);
    ASSERT_GT(rank, 0) << "rank " << r << " did not start\n" << l.err();
    agent[r] = static_cast<pid_t>(ppid_of(rank));
    ASSERT_TRUE(contains(read_file("/proc/" + std::to_string(agent[r]) + "/cmdline"), "--agent")) << "rank " << r;
  }
  ASSERT_EQ(kill(l.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_state(l.pid(), "T", 30)) << "the launcher did not stop";
  ASSERT_TRUE(testutil::touch_file(d + "/go.1"));
  ASSERT_TRUE(wait_state(agent[1], "Z", 60)) << "rank 1's agent did not exit after the rank's kill";
  ASSERT_TRUE(testutil::touch_file(d + "/go.0"));
  ASSERT_TRUE(wait_state(agent[0], "Z", 60)) << "rank 0's agent did not exit after the rank's exit 1";
  ASSERT_EQ(kill(l.pid(), SIGCONT), 0);
  EXPECT_EQ(l.code(30), 137) << l.err();
  EXPECT_TRUE(contains(l.err(), "launch: rank 1 (localhost, pid ")) << l.err();
  EXPECT_FALSE(contains(l.err(), "rank 0 (localhost")) << l.err();
  system(("rm -rf " + d).c_str());
}

TEST_F(LaunchLocal, KilledRankIsTheCauseWhenSeenJustAfterAPeerFailure) {
  // Rank 1 exits 1 first (once rank 0 is ready); rank 0 is killed by SIGKILL as soon as the stop
  // that rank 1's failure began reaches it (its SIGTERM trap kills it), so its death is seen just
  // after the first failure, within the launcher's 0.5 s window: the kill counts as the first failure.
  const std::string armed = "/tmp/" + marker_ + "-armed";
  Launch l({"-np", "2", "--gloo", "sh", "-c",
            "case $BARESGD_RANK in 0) trap 'kill -9 $$' TERM; touch " + armed + "; sleep 120 & wait;; *) " +
                testutil::sh_wait_for(armed) + "exit 1;; esac; : " + marker_});
  EXPECT_EQ(l.code(30), 137) << l.err();
  EXPECT_TRUE(contains(l.err(), "launch: rank 1 (localhost, pid ")) << l.err();
  EXPECT_TRUE(std::regex_search(l.err(), std::regex("launch: rank 0 \\(localhost, pid \\d+\\) was killed by signal 9 "
                                                    "\\(SIGKILL\\) at the same time; that is the first failure")))
      << l.err();
  unlink(armed.c_str());
}

TEST_F(LaunchLocal, KillNineOfOneRank) {
  Launch l({"-np", "4", "--gloo", rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 30)) << l.out() << l.err();
  auto pids = ready_pids(l.out());
  ASSERT_EQ(pids.size(), 4u);
  // The families have forked: launcher + 4 x (rank, child, grandchild).
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  ASSERT_EQ(kill(pids[2], SIGKILL), 0);
  EXPECT_EQ(l.code(30), 137) << l.err();  // the ranks sleep 120 s: only the stop ends the job in time
  double detect = secs_since(t0);
  EXPECT_TRUE(contains(l.err(), "launch: rank 2 (localhost, pid " + std::to_string(pids[2]) +
                                    ") was killed by signal 9 (SIGKILL); stopping the job"))
      << l.err();
  double gone = wait_no_procs(marker_, 10);
  EXPECT_GE(gone, 0) << "orphans left";
  std::cerr << "[ timing ] kill -9 of a local rank -> launcher exit in " << detect << " s, all gone +" << gone
            << " s\n";
}

TEST_F(LaunchLocal, SigintStopsAllRanks) {
  Launch l({"-np", "4", "--gloo", rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 30)) << l.err();
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  kill(l.pid(), SIGINT);
  EXPECT_EQ(l.code(30), 130) << l.err();
  std::cerr << "[ timing ] SIGINT to the launcher -> exit in " << secs_since(t0) << " s\n";
  EXPECT_TRUE(contains(l.err(), "received SIGINT")) << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0) << "orphans left";
}

TEST_F(LaunchLocal, SigtermIgnoringRanksAreKilledAfterGrace) {
  Launch l({"-np", "2", "--gloo", rank_tool(), "ignore-term", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 2, 30)) << l.err();
  auto t0 = Clock::now();
  kill(l.pid(), SIGTERM);
  EXPECT_EQ(l.code(30), 143) << l.err();
  double t = secs_since(t0);
  // Both ranks got the stop's SIGTERM and outlived it; only the SIGKILL after the launcher's
  // 3 s grace (counted from its SIGTERM, which came after t0) ended them.
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(contains(l.out(), "[" + std::to_string(r) + "]<stdout>:ignored SIGTERM\n")) << l.out();
  EXPECT_GE(t, 3.0) << "the ranks were killed before the grace period ended";
  EXPECT_GE(wait_no_procs(marker_, 30), 0);
  std::cerr << "[ timing ] SIGTERM-ignoring ranks killed " << t << " s after the launcher's SIGTERM (grace 3 s)\n";
}

TEST_F(LaunchLocal, KillNineOfLauncherTakesRanksDown) {
  Launch l({"-np", "4", "--gloo", rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 30)) << l.err();
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  kill(l.pid(), SIGKILL);
  l.wait(10);
  double gone = wait_no_procs(marker_, 15);
  EXPECT_GE(gone, 0) << "ranks survived the launcher";
  std::cerr << "[ timing ] kill -9 of the launcher -> local ranks gone in " << secs_since(t0) << " s\n";
}

TEST_F(LaunchLocal, TimeoutStopsJobWith124) {
  Launch l({"-np", "2", "--gloo", "--timeout", "1", rank_tool(), "sleep", "60", marker_});
  EXPECT_EQ(l.code(30), 124) << l.err();
  EXPECT_GE(l.elapsed(), 1.0) << "stopped before its --timeout";
  EXPECT_TRUE(contains(l.err(), "--timeout")) << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0);
}

TEST_F(LaunchLocal, AllRanksSucceedExitZeroAndBackgroundLeftoversAreReaped) {
  Launch l({"-np", "2", "--gloo", "sh", "-c", "(sleep 60; : " + marker_ + ") >/dev/null 2>&1 & echo done"});
  EXPECT_EQ(l.code(30), 0) << l.err();
  EXPECT_EQ(split_lines(l.out()).size(), 2u);
  EXPECT_GE(wait_no_procs(marker_, 10), 0);
}

TEST_F(LaunchLocal, BadCommandLinesExit2) {
  struct {
    std::vector<std::string> args;
    std::string msg;
  } cases[] = {
      {{"-np", "2", "--gloo", "--bogus", "true"}, "unknown option '--bogus'"},
      {{"--gloo", "true"}, "-np"},
      {{"-np", "0", "--gloo", "true"}, "-np must be >= 1"},
      {{"-np", "2", "--gloo", "--mpi", "true"}, "--gloo and --mpi"},
      {{"-np", "2", "--gloo"}, "missing CMD"},
      {{"-np", "2", "--gloo", "no-such-command-" + marker_}, "not found"},
      {{"-np", "5", "--gloo", "-H", "localhost:2", "true"}, "more than the 2 slots"},
      {{"-np", "2", "--gloo", "-H", "a:2,a:1", "true"}, "twice"},
      {{"-np", "2", "--gloo", "--tag-format", "json", "true"}, "--tag-format"},
      {{"-np", "2", "--gloo", "--hostfile", "/nonexistent/hf", "true"}, "/nonexistent/hf"},
  };
  for (const auto& c : cases) {
    Launch l(c.args);
    std::string all;
    for (auto& a : c.args) all += a + " ";
    EXPECT_EQ(l.code(30), 2) << all << "\n" << l.err();
    EXPECT_TRUE(contains(l.err(), c.msg)) << all << "\n" << l.err();
    EXPECT_EQ(split_lines(l.err()).size() <= 2, true) << l.err();
    EXPECT_TRUE(l.out().empty());
  }
  Launch u({"-np", "2", "--gloo", "--bogus", "true"});
  u.code(30);
  EXPECT_TRUE(contains(u.err(), "usage: launch -np N")) << u.err();
  // A malformed hostfile names file:line.
  std::string hf = "/tmp/" + marker_ + ".hosts";
  std::ofstream(hf) << "localhost slots=2\nbroken slots=zero\n";
  Launch h({"-np", "2", "--gloo", "--hostfile", hf, "true"});
  EXPECT_EQ(h.code(30), 2);
  EXPECT_TRUE(contains(h.err(), hf + ":2")) << h.err();
  unlink(hf.c_str());
  Launch help({"--help"});
  EXPECT_EQ(help.code(30), 0);
  EXPECT_TRUE(contains(help.out(), "--tag-format"));
}

TEST_F(LaunchLocal, SecretOnlyInEnvironment) {
  // The ranks run until the test has looked at every command line (its go file).
  const std::string go = "/tmp/" + marker_ + "-go";
  Launch l({"-np", "2", "--gloo", "sh", "-c", "echo S=$BARESGD_SECRET; " + testutil::sh_wait_for(go) + ": " + marker_});
  ASSERT_TRUE(l.wait_out("S=", 2, 30)) << l.err();
  std::regex re("<stdout>:S=([0-9a-f]{64})");
  std::smatch sm;
  std::string out = l.out();
  ASSERT_TRUE(std::regex_search(out, sm, re)) << out;
  std::string secret = sm[1];
  EXPECT_EQ(procs_with(secret).size(), 0u) << "secret on a command line";
  EXPECT_GE(procs_with(marker_).size(), 2u);  // the ranks were running while we looked
  ASSERT_TRUE(testutil::touch_file(go));
  EXPECT_EQ(l.code(90), 0);
  unlink(go.c_str());
  auto lines = split_lines(l.out());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].substr(lines[0].find(':')), lines[1].substr(lines[1].find(':')));  // one secret per job
  // --verbose never prints it.
  Launch v({"-np", "1", "--gloo", "--verbose", "sh", "-c", "echo S=$BARESGD_SECRET >&2"});
  ASSERT_EQ(v.code(30), 0);
  std::string verr = v.err();
  ASSERT_TRUE(std::regex_search(verr, sm, std::regex("S=([0-9a-f]{64})")));
  std::string s2 = sm[1];
  EXPECT_EQ(verr.find(s2), verr.rfind(s2)) << "secret printed by --verbose";
  EXPECT_TRUE(contains(verr, "launch: rank")) << verr;
}

TEST_F(LaunchLocal, OutputFilenameWritesUntaggedFiles) {
  std::string dir = "/tmp/" + marker_ + "-out";
  Launch l(
      {"-np", "2", "--gloo", "--output-filename", dir, "sh", "-c", "printf 'a\\r\\nb\\rc' ; echo e$BARESGD_RANK >&2"});
  ASSERT_EQ(l.code(30), 0) << l.err();
  EXPECT_EQ(read_file(dir + "/rank.0/stdout"), "a\r\nb\rc");
  EXPECT_EQ(read_file(dir + "/rank.1/stderr"), "e1\n");
  EXPECT_TRUE(contains(l.out(), "[1]<stdout>:c\n"));
  system(("rm -rf " + dir).c_str());
  // Unwritable: a path under a regular file.
  std::string file = "/tmp/" + marker_ + "-file";
  std::ofstream(file) << "x";
  Launch u({"-np", "1", "--gloo", "--output-filename", file + "/sub", "true"});
  EXPECT_EQ(u.code(30), 1);
  EXPECT_TRUE(contains(u.err(), "--output-filename")) << u.err();
  EXPECT_TRUE(contains(u.err(), file)) << u.err();
  unlink(file.c_str());
}

TEST_F(LaunchLocal, OutputFilenameDiskFull) {
  // A full disk: a 4 KiB tmpfs, filled, in a mount namespace of this test's own (root, as CI runs).
  // --output-filename never writes through a symlink, so /dev/full cannot stand in.
  if (geteuid() != 0) BARESGD_SKIP("needs root to mount a full tmpfs");
  std::string dir = "/tmp/" + marker_ + "-full";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  auto r = testutil::run("unshare -m sh -c \"mount -t tmpfs -o size=4k none " + dir + " && (head -c 8192 /dev/zero > " +
                             dir + "/fill; mkdir " + dir + "/out) && exec '" + testutil::launch_bin() +
                             "' -np 1 --gloo --output-filename " + dir + "/out sh -c 'echo hello'\"",
                         30);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(contains(r.err, dir + "/out/rank.0/stdout")) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:hello\n");  // the console still gets everything
  system(("rm -rf " + dir).c_str());
}

TEST_F(LaunchLocal, TimestampPrefix) {
  Launch l({"-np", "1", "--gloo", "--timestamp", "sh", "-c", "echo hi"});
  ASSERT_EQ(l.code(30), 0);
  EXPECT_TRUE(std::regex_match(l.out(), std::regex("^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\\d \\d\\d:\\d\\d:\\d\\d \\d{4}"
                                                   "\\[0\\]<stdout>:hi\n$")))
      << l.out();
}

// The launcher's child process named `name` (mpirun), or -1.
pid_t child_named(pid_t parent, const std::string& name) {
  DIR* d = opendir("/proc");
  pid_t found = -1;
  while (dirent* e = d ? readdir(d) : nullptr) {
    const pid_t pid = pid_t(atol(e->d_name));
    if (pid <= 0 || ppid_of(pid) != parent) continue;
    std::string comm = read_file("/proc/" + std::to_string(pid) + "/comm");
    if (comm == name + "\n") found = pid;
  }
  if (d) closedir(d);
  return found;
}

TEST_F(LaunchLocal, KillNineOfMpirunIsNamedAndLeavesNoRank) {
  Launch l({"-np", "2", "--mpi", "sh", "-c", "echo up; sleep 120; : " + marker_});
  ASSERT_TRUE(l.wait_out("<stdout>:up", 2, 60)) << l.out() << l.err();
  const pid_t mpirun = child_named(l.pid(), "mpirun");
  ASSERT_GT(mpirun, 0) << "no mpirun child of the launcher";
  ASSERT_EQ(kill(mpirun, SIGKILL), 0);
  EXPECT_EQ(l.code(60), 137) << l.err();
  EXPECT_TRUE(contains(l.err(),
                       "launch: mpirun was killed by signal 9 (SIGKILL) (not by this launcher); its ranks "
                       "ended with it"))
      << l.err();
  EXPECT_GE(wait_no_procs(marker_, 30), 0) << "a rank outlived its mpirun";
}

TEST_F(LaunchLocal, MpiModeLocalhost) {
  Launch l({"-np", "2", "--mpi", "--tag-format", "host", "sh", "-c",
            "echo r$OMPI_COMM_WORLD_RANK $BARESGD_COMM ${#BARESGD_SECRET}; echo e >&2"});
  ASSERT_EQ(l.code(60), 0) << l.err();
  EXPECT_TRUE(contains(l.out(), "[localhost:0]<stdout>:r0 mpi 64\n")) << l.out();
  EXPECT_TRUE(contains(l.out(), "[localhost:1]<stdout>:r1 mpi 64\n")) << l.out();
  EXPECT_TRUE(contains(l.err(), "[localhost:1]<stderr>:e\n")) << l.err();
  Launch f({"-np", "2", "--mpi", "sh", "-c", "exit $((OMPI_COMM_WORLD_RANK * 3))"});
  EXPECT_EQ(f.code(60), 3) << f.err();  // mpirun's status
  Launch t({"-np", "2", "--mpi", "--timeout", "1", "sh", "-c", "sleep 60; : " + marker_});
  EXPECT_EQ(t.code(60), 124) << t.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0);
}
