// test_launch_remote: ./launch with ranks on the test hosts of tests/test_hosts.sh (ssh on
// 127.0.0.11 / 127.0.0.13, hpc02 never answers) in --gloo and --mpi mode: rank tables, environment
// forwarding, unreachable and silent hosts, kills of remote ranks, agents and the launcher, floods
// and long lines through ssh, the store, allreduce end to end.
#include <gtest/gtest.h>

#include "tests/launch_harness.h"

using namespace launchharness;  // NOLINT: the harness is these files' vocabulary

// ============================================================================================
// Integration: remote ranks on the test hosts (tests/test_hosts.sh)
// ============================================================================================

TEST_F(LaunchRemote, GlooRankTableOverSsh) {
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), "sh", "-c",
            "echo $BARESGD_RANK $BARESGD_HOSTNAME $BARESGD_HOST_ADDR $BARESGD_LOCAL_RANK $BARESGD_CROSS_RANK; "
            "echo via ${SSH_CONNECTION#* * } ${#BARESGD_SECRET} >&2"});
  ASSERT_EQ(l.code(60), 0) << l.err();
  std::string out = l.out(), err = l.err();
  EXPECT_TRUE(contains(out, "[0]<stdout>:0 hpc01 127.0.0.11 0 0\n")) << out;
  EXPECT_TRUE(contains(out, "[1]<stdout>:1 hpc01 127.0.0.11 1 0\n")) << out;
  EXPECT_TRUE(contains(out, "[2]<stdout>:2 hpc03 127.0.0.13 0 1\n")) << out;
  EXPECT_TRUE(contains(out, "[3]<stdout>:3 hpc03 127.0.0.13 1 1\n")) << out;
  EXPECT_EQ(split_lines(out).size(), 4u) << out;
  // Ranks 2 and 3 really came in through ssh on 127.0.0.13 and got the secret (64 hex chars).
  std::string port = read_file(hosts_dir() + "/port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  EXPECT_TRUE(contains(err, "[2]<stderr>:via 127.0.0.13 " + port + " 64\n")) << err;
  EXPECT_TRUE(contains(err, "[3]<stderr>:via 127.0.0.13 " + port + " 64\n")) << err;
  EXPECT_TRUE(contains(err, "[0]<stderr>:via 127.0.0.11 " + port + " 64\n")) << err;
  EXPECT_FALSE(contains(err, "@@BSGD-AGENT")) << err;
  std::cerr << "[ sample ] --gloo -H hpc01:2,hpc03:2:\n" << out;
}

TEST_F(LaunchRemote, MixedLocalAndRemoteWithHostTags) {
  Launch l({"-np", "3", "--gloo", "-H", "localhost:1,hpc03:2", "-F", cfg(), "--tag-format", "host", "--verbose", "sh",
            "-c", "echo $BARESGD_HOST_ADDR $BARESGD_LOCAL_RANK/$BARESGD_LOCAL_SIZE"});
  ASSERT_EQ(l.code(60), 0) << l.err();
  EXPECT_TRUE(contains(l.out(), "[localhost:0]<stdout>:127.0.0.1 0/1\n")) << l.out();
  EXPECT_TRUE(contains(l.out(), "[hpc03:1]<stdout>:127.0.0.13 0/2\n")) << l.out();
  EXPECT_TRUE(contains(l.out(), "[hpc03:2]<stdout>:127.0.0.13 1/2\n")) << l.out();
  EXPECT_TRUE(std::regex_search(l.err(), std::regex("launch: 2 +hpc03 +1/2 +0/1 +ssh +127\\.0\\.0\\.13"))) << l.err();
  EXPECT_TRUE(contains(l.err(), "--agent")) << l.err();
}

// Before issue 12, FOO=bar arrived empty on remote --mpi ranks (it arrived with --gloo).
TEST_F(LaunchRemote, MpiForwardsTheCallersEnvironmentToRemoteRanks) {
  ::setenv("BARESGD_TEST_FOO", "bar", 1);
  Launch l({"-np", "2", "--mpi", "-H", "hpc01:1,hpc03:1", "-F", cfg(), "-x", "BARESGD_TEST_BAZ=qux", "sh", "-c",
            "echo $OMPI_COMM_WORLD_RANK ${BARESGD_TEST_FOO:-empty} ${BARESGD_TEST_BAZ:-empty} ${SSH_CONNECTION#* * }"});
  ::unsetenv("BARESGD_TEST_FOO");
  ASSERT_EQ(l.code(120), 0) << l.err();
  EXPECT_TRUE(std::regex_search(l.out(), std::regex("\\b1 bar qux 127\\.0\\.0\\.13 "))) << l.out();
  EXPECT_TRUE(std::regex_search(l.out(), std::regex("\\b0 bar qux 127\\.0\\.0\\.11 "))) << l.out();
}

TEST_F(LaunchRemote, MpiRankTableOverSsh) {
  Launch l({"-np", "4", "--mpi", "-H", "hpc01:2,hpc03:2", "-F", cfg(), "--verbose", "sh", "-c",
            "echo $OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_LOCAL_RANK $BARESGD_COMM ${SSH_CONNECTION#* * }"});
  ASSERT_EQ(l.code(120), 0) << l.err();
  std::string out = l.out();
  std::string port = read_file(hosts_dir() + "/port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  EXPECT_TRUE(contains(out, "[0]<stdout>:0 0 mpi 127.0.0.11 " + port + "\n")) << out;
  EXPECT_TRUE(contains(out, "[1]<stdout>:1 1 mpi 127.0.0.11 " + port + "\n")) << out;
  EXPECT_TRUE(contains(out, "[2]<stdout>:2 0 mpi 127.0.0.13 " + port + "\n")) << out;
  EXPECT_TRUE(contains(out, "[3]<stdout>:3 1 mpi 127.0.0.13 " + port + "\n")) << out;
  EXPECT_EQ(split_lines(out).size(), 4u) << out;
  EXPECT_TRUE(contains(l.err(), "plm_rsh_args")) << l.err();
  EXPECT_TRUE(contains(l.err(), "-F " + cfg())) << l.err();
  std::cerr << "[ sample ] --mpi -H hpc01:2,hpc03:2:\n" << out;
  // Same tags in the other formats.
  Launch m({"-np", "4", "--mpi", "-H", "hpc01:2,hpc03:2", "-F", cfg(), "--tag-format", "mpi", "sh", "-c",
            "echo x$OMPI_COMM_WORLD_RANK"});
  ASSERT_EQ(m.code(120), 0) << m.err();
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(contains(m.out(), "[1," + std::to_string(r) + "]<stdout>:x" + std::to_string(r) + "\n")) << m.out();
}

TEST_F(LaunchRemote, UnreachableHostFailsFastAndStartsNothing) {
  // Fast: the refused connection decides, not --start-timeout, which is longer than the deadline
  // of code() (a launcher waiting it out would fail that deadline and not say "Connection refused").
  for (const char* mode : {"--gloo", "--mpi"}) {
    std::string flag = "/tmp/" + marker_ + "-started";
    Launch l({"-np", "3", mode, "-H", "hpc01:1,hpc02:1,hpc03:1", "-F", cfg(), "--start-timeout", "90", "sh", "-c",
              "touch " + flag + ".$BARESGD_RANK$OMPI_COMM_WORLD_RANK"});
    EXPECT_EQ(l.code(60), 1) << l.err();
    std::cerr << "[ timing ] " << mode << " with an unreachable host: exit in " << l.elapsed() << " s\n";
    auto lines = split_lines(l.err());
    ASSERT_EQ(lines.size(), 1u) << l.err();
    EXPECT_TRUE(contains(lines[0], "launch: cannot reach hpc02 over ssh: ")) << lines[0];
    EXPECT_TRUE(contains(lines[0], "Connection refused")) << lines[0];
    for (int r = 0; r < 3; ++r) EXPECT_NE(access((flag + "." + std::to_string(r)).c_str(), F_OK), 0) << "rank started";
    EXPECT_TRUE(l.out().empty());
  }
}

TEST_F(LaunchRemote, KillNineOfRemoteRank) {
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 60)) << l.out() << l.err();
  auto pids = ready_pids(l.out());
  ASSERT_EQ(pids.size(), 4u);
  // The families have forked: launcher + 4 x (rank, child, grandchild).
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  ASSERT_EQ(kill(pids[3], SIGKILL), 0);
  EXPECT_EQ(l.code(30), 137) << l.err();  // the ranks sleep 120 s: only the stop ends the job in time
  double detect = secs_since(t0);
  EXPECT_TRUE(contains(l.err(), "launch: rank 3 (hpc03, pid " + std::to_string(pids[3]) +
                                    ") was killed by signal 9 (SIGKILL); stopping the job"))
      << l.err();
  double gone = wait_no_procs(marker_, 30);
  EXPECT_GE(gone, 0) << "orphans left";
  EXPECT_TRUE(procs_with("--agent").empty() || wait_no_procs(" --agent", 30) >= 0);
  std::cerr << "[ timing ] kill -9 of a remote rank -> launcher exit in " << detect << " s, all gone +" << gone
            << " s\n";
}

TEST_F(LaunchRemote, RemoteRankExitCodeAndSigint) {
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), "sh", "-c",
            "if [ $BARESGD_RANK = 2 ]; then echo bye >&2; exit 42; fi; sleep 60; : " + marker_});
  EXPECT_EQ(l.code(30), 42) << l.err();
  EXPECT_TRUE(std::regex_search(l.err(), std::regex("rank 2 \\(hpc03, pid \\d+\\) exited with status 42"))) << l.err();
  EXPECT_TRUE(contains(l.err(), "[2]<stderr>:bye\n")) << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0);

  Launch s({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(s.wait_out("ready", 4, 60)) << s.err();
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  kill(s.pid(), SIGINT);
  EXPECT_EQ(s.code(30), 130) << s.err();
  std::cerr << "[ timing ] SIGINT to the launcher of remote ranks -> exit in " << secs_since(t0) << " s\n";
  EXPECT_GE(wait_no_procs(marker_, 30), 0) << "orphans left";
}

TEST_F(LaunchRemote, KillNineOfRemoteAgentIsAFailure) {
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 60)) << l.err();
  auto pids = ready_pids(l.out());
  ASSERT_EQ(pids.size(), 4u);
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  // The agent is the rank's parent.
  const long ppid = ppid_of(pids[2]);
  ASSERT_GT(ppid, 1);
  ASSERT_TRUE(contains(read_file("/proc/" + std::to_string(ppid) + "/cmdline"), "--agent"));
  kill(static_cast<pid_t>(ppid), SIGKILL);
  EXPECT_EQ(l.code(30), 255) << l.err();
  EXPECT_TRUE(contains(l.err(), "launch: rank 2 (hpc03, pid " + std::to_string(pids[2]) + ") lost its agent"))
      << l.err();
  EXPECT_GE(wait_no_procs(marker_, 10), 0) << "orphans left";
}

TEST_F(LaunchRemote, KillNineOfLauncherTakesRemoteRanksDown) {
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), rank_tool(), "family", "120", marker_});
  ASSERT_TRUE(l.wait_out("ready", 4, 60)) << l.err();
  ASSERT_TRUE(wait_procs(marker_, 13, 30)) << procs_with(marker_).size() << " processes";
  auto t0 = Clock::now();
  kill(l.pid(), SIGKILL);
  l.wait(10);
  double gone = wait_no_procs(marker_, 30);
  EXPECT_GE(gone, 0) << "remote ranks survived the launcher";
  std::cerr << "[ timing ] kill -9 of the launcher -> remote ranks gone in " << secs_since(t0) << " s\n";
}

TEST_F(LaunchRemote, SecretNeverOnACommandLine) {
  // The ranks run until the test has looked at every command line (its go file).
  const std::string go = "/tmp/" + marker_ + "-go";
  Launch l({"-np", "3", "--gloo", "-H", "localhost:1,hpc03:2", "-F", cfg(), "sh", "-c",
            "echo S=$BARESGD_SECRET; " + testutil::sh_wait_for(go) + ": " + marker_});
  ASSERT_TRUE(l.wait_out("S=", 3, 60)) << l.err();
  std::smatch sm;
  std::string out = l.out();
  ASSERT_TRUE(std::regex_search(out, sm, std::regex("S=([0-9a-f]{64})"))) << out;
  std::string secret = sm[1];
  EXPECT_TRUE(procs_with(secret).empty()) << "secret on a command line (ssh, sshd, shell, agent or rank)";
  EXPECT_GE(procs_with("--agent").size(), 2u);
  EXPECT_GE(procs_with(marker_).size(), 4u) << "the launcher and its 3 ranks, running while we looked";
  ASSERT_TRUE(testutil::touch_file(go));
  EXPECT_EQ(l.code(90), 0) << l.err();
  unlink(go.c_str());
  int same = 0;
  for (const auto& line : split_lines(l.out())) same += contains(line, "S=" + secret);
  EXPECT_EQ(same, 3);
  // MPI mode: mpirun, its ssh/orted command lines carry no secret either.
  Launch m({"-np", "3", "--mpi", "-H", "localhost:1,hpc03:2", "-F", cfg(), "sh", "-c",
            "echo S=$BARESGD_SECRET; " + testutil::sh_wait_for(go) + ": " + marker_});
  ASSERT_TRUE(m.wait_out("S=", 3, 60)) << m.err();
  out = m.out();
  ASSERT_TRUE(std::regex_search(out, sm, std::regex("S=([0-9a-f]{64})"))) << out;
  secret = sm[1];
  EXPECT_TRUE(procs_with(secret).empty()) << "secret on a command line in --mpi mode";
  EXPECT_GE(procs_with(marker_).size(), 4u) << "the launcher, mpirun and the 3 ranks, running while we looked";
  ASSERT_TRUE(testutil::touch_file(go));
  EXPECT_EQ(m.code(90), 0) << m.err();
  unlink(go.c_str());
}

TEST_F(LaunchRemote, FloodThroughSsh) {
  const int kLines = 5000;
  Launch l({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg(), rank_tool(), "lines", std::to_string(kLines)});
  ASSERT_EQ(l.code(120), 0) << l.err().substr(0, 2000);
  // The remote login shell's own chatter (rc files; on CI pyenv's "cannot rehash" when several sessions
  // start at once) reaches the launcher on ssh's stderr before the agent runs and is tagged like the
  // rank's stderr, as horovodrun does. Such a line is shown and allowed on stderr only. A lost, split
  // or interleaved rank line cannot hide among them: every one of the 4 x kLines must be there whole,
  // in its rank's order.
  const std::regex whole[2] = {std::regex("^\\[[0-3]\\]<stdout>:r[0-3] out [0-9]+ [a-z]* end$"),
                               std::regex("^\\[[0-3]\\]<stderr>:r[0-3] err [0-9]+ [a-z]* end$")};
  for (int stream = 0; stream < 2; ++stream) {
    std::vector<std::string> lines, foreign;
    for (const std::string& line : split_lines(stream == 0 ? l.out() : l.err()))
      (std::regex_match(line, whole[stream]) ? lines : foreign).push_back(line);
    for (const std::string& line : foreign) {
      std::cerr << "[ note ] not a flood line on " << (stream == 0 ? "stdout" : "stderr") << ": " << line << "\n";
      EXPECT_EQ(stream, 1) << "stdout carries only the ranks' lines: " << line;
    }
    ASSERT_EQ(lines.size(), static_cast<size_t>(4 * kLines));
    std::vector<int> next(4, 0);
    for (const std::string& line : lines) {
      int r = line[1] - '0';
      ASSERT_TRUE(r >= 0 && r < 4) << line;
      int i = next[r]++;
      std::string pad(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
      ASSERT_EQ(line, "[" + std::to_string(r) + "]" + (stream == 0 ? "<stdout>:r" : "<stderr>:r") + std::to_string(r) +
                          (stream == 0 ? " out " : " err ") + std::to_string(i) + " " + pad + " end");
    }
  }
}

TEST_F(LaunchRemote, SilentHostTimesOutWithinStartTimeout) {
  // Something accepts TCP on hpc02's address but never speaks SSH: only the deadline helps.
  std::string port = read_file(hosts_dir() + "/port");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  inet_pton(AF_INET, "127.0.0.12", &sa.sin_addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
  ASSERT_EQ(listen(fd, 16), 0);
  // The deadline runs from "checking 2 host(s) over ssh" (--verbose), after the launcher started:
  // the job cannot end sooner than --start-timeout after its start. That it was the launcher's
  // deadline that ended it, and not ssh's own retries (3 attempts of ConnectTimeout=6: 18 s), the
  // reason line says. kStart is 6 s so that hpc01, a real sshd, answers in time on a loaded machine
  // (2 s did not).
  const double kStart = 6;
  Launch l({"-np", "2", "--gloo", "-H", "hpc01:1,hpc02:1", "-F", cfg(), "--start-timeout", "6", "--verbose", "sh", "-c",
            "echo started; : " + marker_});
  ASSERT_TRUE(l.wait_out("launch: checking 2 host(s) over ssh\n", 1, 30, true)) << l.err();
  const auto checking = Clock::now();
  EXPECT_EQ(l.code(30), 1) << l.err();
  close(fd);
  EXPECT_GE(l.elapsed(), kStart) << "the launcher gave up before --start-timeout:\n" << l.err();
  std::cerr << "[ timing ] --start-timeout 6 on a silent host: exit " << l.exit_time_since(checking)
            << " s after the checking line\n";
  // --verbose's own lines aside, one line: the reason.
  std::vector<std::string> lines;
  for (const std::string& line : split_lines(l.err())) {
    EXPECT_EQ(line.compare(0, 8, "launch: "), 0) << line;
    if (contains(line, "cannot reach")) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 1u) << l.err();
  EXPECT_TRUE(contains(lines[0], "launch: cannot reach hpc02 over ssh: no answer within 6.0 s (--start-timeout)"))
      << lines[0];
  EXPECT_TRUE(l.out().empty()) << l.out();
  EXPECT_GE(wait_no_procs(marker_, 30), 0);
}

TEST_F(LaunchRemote, LongLinesAndPartialLinesThroughSsh) {
  const size_t kBytes = 2u << 20;
  Launch l({"-np", "2", "--gloo", "-H", "hpc03:2", "-F", cfg(), rank_tool(), "bigline", std::to_string(kBytes)});
  ASSERT_EQ(l.code(60), 0) << l.err();
  auto lines = split_lines(l.out());
  ASSERT_EQ(lines.size(), 4u);
  int big = 0;
  for (const auto& line : lines) {
    if (line.size() > kBytes) {
      ++big;
      EXPECT_EQ(line.size(), kBytes + std::string("[0]<stdout>:").size());
    } else {
      EXPECT_TRUE(line == "[0]<stdout>:tail" || line == "[1]<stdout>:tail") << line.substr(0, 80);
    }
  }
  EXPECT_EQ(big, 2);
  // A partial last line on stderr, right before a failure: kept whole, no agent line leaks.
  Launch p({"-np", "2", "--gloo", "-H", "hpc03:2", "-F", cfg(), "sh", "-c",
            "printf 'partial line' >&2; exit $((BARESGD_RANK + 2))"});
  int code = p.code(60);
  EXPECT_TRUE(code == 2 || code == 3) << p.err();
  EXPECT_TRUE(contains(p.err(), "<stderr>:partial line\n")) << p.err();
  EXPECT_FALSE(contains(p.err(), "@@BSGD")) << p.err();
  EXPECT_TRUE(std::regex_search(p.err(), std::regex("launch: rank [01] \\(hpc03, pid \\d+\\) exited with status [23]")))
      << p.err();
}

TEST_F(LaunchRemote, HostfileAndMpiFailureStatus) {
  std::string hf = hosts_dir() + "/hostfile";
  std::ofstream(hf) << "# test cluster\nhpc01 slots=1\nhpc03 slots=2\n";
  Launch l({"-np", "3", "--gloo", "--hostfile", hf, "-F", cfg(), "sh", "-c", "echo $BARESGD_HOSTNAME"});
  ASSERT_EQ(l.code(60), 0) << l.err();
  EXPECT_TRUE(contains(l.out(), "[0]<stdout>:hpc01\n")) << l.out();
  EXPECT_TRUE(contains(l.out(), "[2]<stdout>:hpc03\n")) << l.out();
  Launch m({"-np", "4", "--mpi", "-H", "hpc01:2,hpc03:2", "-F", cfg(), "sh", "-c",
            "if [ $OMPI_COMM_WORLD_RANK = 3 ]; then exit 9; fi; sleep 60; : " + marker_});
  EXPECT_EQ(m.code(120), 9) << m.err();  // mpirun's status
  EXPECT_GE(wait_no_procs(marker_, 15), 0);
}

TEST_F(LaunchRemote, GlooRendezvousThroughTheStore) {
  // The secret handed over by the agent opens the launcher's store for local and remote ranks.
  Launch l({"-np", "4", "--gloo", "-H", "localhost:1,hpc01:1,hpc03:2", "-F", cfg(), store_tool()});
  ASSERT_EQ(l.code(60), 0) << l.err();
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(contains(l.out(), "[" + std::to_string(r) + "]<stdout>:store ok rank=" + std::to_string(r) +
                                      " size=4 count=4 peers=127.0.0.1,127.0.0.11,127.0.0.13,127.0.0.13\n"))
        << l.out();
  // A wrong secret is turned away.
  Launch b({"-np", "1", "--gloo", "-H", "hpc03:1", "-F", cfg(), store_tool(), "badsecret"});
  EXPECT_EQ(b.code(60), 3) << b.out() << b.err();
  EXPECT_TRUE(contains(b.out(), "[0]<stdout>:denied: ")) << b.out();
}

TEST_F(LaunchRemote, EndToEndAllreduceGlooAndMpi) {
  // comm/ builds its communicator from what the launcher set: Gloo binds BARESGD_HOST_ADDR
  // (127.0.0.11 / 127.0.0.13) and meets through the store; MPI goes through mpirun's ssh.
  for (const char* mode : {"--gloo", "--mpi"}) {
    Launch l({"-np", "4", mode, "-H", "hpc01:2,hpc03:2", "-F", cfg(), allreduce_tool()});
    ASSERT_EQ(l.code(120), 0) << mode << "\n" << l.out() << l.err();
    std::string backend = std::string(mode).substr(2);
    const char* want[] = {"rank=0 size=4 local=0/2 cross=0/2", "rank=1 size=4 local=1/2 cross=0/2",
                          "rank=2 size=4 local=0/2 cross=1/2", "rank=3 size=4 local=1/2 cross=1/2"};
    for (int r = 0; r < 4; ++r)
      EXPECT_TRUE(contains(
          l.out(), "[" + std::to_string(r) + "]<stdout>:allreduce ok backend=" + backend + " " + want[r] + "\n"))
          << mode << "\n"
          << l.out();
  }
}

TEST_F(LaunchRemote, TimelineVariableReachesRemoteRanks) {
  std::string t = hosts_dir() + "/t.json", e = hosts_dir() + "/env.json";
  const char* show = "echo T=$HOROVOD_TIMELINE ${SSH_CONNECTION:+ssh}";
  for (const char* mode : {"--gloo", "--mpi"}) {
    Launch flag(
        {"-np", "3", mode, "-H", "localhost:1,hpc03:2", "-F", cfg(), "--timeline-filename", t, "sh", "-c", show},
        {"HOROVOD_TIMELINE"});
    ASSERT_EQ(flag.code(120), 0) << mode << "\n" << flag.err();
    EXPECT_TRUE(contains(flag.out(), "[0]<stdout>:T=" + t + "\n")) << mode << "\n" << flag.out();
    EXPECT_TRUE(contains(flag.out(), "[1]<stdout>:T=" + t + " ssh\n")) << mode << "\n" << flag.out();
    EXPECT_TRUE(contains(flag.out(), "[2]<stdout>:T=" + t + " ssh\n")) << mode << "\n" << flag.out();
    // HOROVOD_TIMELINE of the launcher's own environment travels the same way.
    Launch env({"-np", "2", mode, "-H", "hpc01:1,hpc03:1", "-F", cfg(), "sh", "-c", show}, {"HOROVOD_TIMELINE=" + e});
    ASSERT_EQ(env.code(120), 0) << mode << "\n" << env.err();
    EXPECT_TRUE(contains(env.out(), "[0]<stdout>:T=" + e + " ssh\n")) << mode << "\n" << env.out();
    EXPECT_TRUE(contains(env.out(), "[1]<stdout>:T=" + e + " ssh\n")) << mode << "\n" << env.out();
  }
}
