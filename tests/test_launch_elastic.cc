// test_launch_elastic: ./launch's elastic mode (--min-np, --max-np, --host-discovery-script,
// --slots-per-host, --elastic-timeout; Horovod's names and meanings) end to end with shell ranks
// (the trainer's side of a world-size change is tested in test_train*), and its flags:
//   - a discovery script decides the hosts and slots of each start, --max-np caps them, a bad
//     line or a failing script is one line and starts nothing, fewer than --min-np slots wait
//     for --elastic-timeout and then fail naming the slots;
//   - after a failure the job restarts with the slots discovery reports then (here: more);
//   - over the sshd test hosts: a host whose ranks fail twice is blacklisted and the job finishes
//     on the other; a host that does not answer over ssh is blacklisted at the start; with
//     --blacklist-cooldown-range a blacklisted host is back once its cooldown is over.
//
// Env: BARESGD_LAUNCH (as the rest of the suite).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>

#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "launcher/proctree.h"
#include "tests/fault_harness.h"
#include "tests/go_file.h"
#include "tests/launch_usage.h"
#include "tests/marked_job_test.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class LaunchElastic : public MarkedJobTest {
 protected:
  // ./launch --gloo FLAGS... /bin/sh -c SCRIPT MARKER
  std::vector<std::string> launch(const std::vector<std::string>& flags, const std::string& script) {
    return cat(cat({launch_, "--gloo"}, flags), {"/bin/sh", "-c", script, marker_});
  }
  // A discovery script that prints the file dir_/hosts (written by the test or by a rank).
  std::string discovery() { return "cat " + dir_ + "/hosts"; }
  void offer(const std::string& hosts) { write_file(dir_ + "/hosts", hosts); }
};

TEST_F(LaunchElastic, DiscoveryDecidesTheWorldAndMaxNpCapsIt) {
  offer("localhost:2\n");
  const std::string rank = "echo rank=$BARESGD_RANK size=$BARESGD_SIZE";
  Proc two(launch({"--host-discovery-script", discovery()}, rank));
  ASSERT_EQ(two.code(60), 0) << two.err();
  EXPECT_TRUE(contains(two.err(), "launch: elastic start 1: 2 ranks on localhost:2\n")) << two.err();
  EXPECT_TRUE(contains(two.out(), "rank=1 size=2")) << two.out();
  Proc one(launch({"--host-discovery-script", discovery(), "--max-np", "1"}, rank));
  ASSERT_EQ(one.code(60), 0) << one.err();
  EXPECT_TRUE(contains(one.err(), "launch: elastic start 1: 1 rank on localhost:1\n")) << one.err();
  EXPECT_TRUE(contains(one.out(), "rank=0 size=1")) << one.out();
  EXPECT_FALSE(contains(one.out(), "rank=1")) << one.out();
}

TEST_F(LaunchElastic, DryRunShowsTheFirstStartAndThePolicy) {
  offer("localhost:2\n");
  Proc dry(launch({"--host-discovery-script", discovery(), "--min-np", "1", "--max-np", "1", "--dry-run"}, "echo x"));
  ASSERT_EQ(dry.code(60), 0) << dry.err();
  EXPECT_TRUE(contains(dry.out(), "dry run: 1 rank on 1 host with --gloo; nothing was started\n")) << dry.out();
  EXPECT_TRUE(contains(dry.out(), "elastic: 1 to 1 ranks, hosts from --host-discovery-script " + discovery() +
                                      " at every start; a host is blacklisted after 2 rank failures or when it stops "
                                      "answering\n"))
      << dry.out();
  EXPECT_FALSE(contains(dry.out(), "\nx\n"));
  Proc cool(
      launch({"--host-discovery-script", discovery(), "--blacklist-cooldown-range", "1", "10", "--dry-run"}, "x"));
  ASSERT_EQ(cool.code(60), 0) << cool.err();
  EXPECT_TRUE(contains(cool.out(),
                       "when it stops answering, until its cooldown is over (--blacklist-cooldown-range 1 "
                       "10)\n"))
      << cool.out();
}

TEST_F(LaunchElastic, HostsWithoutSlotsGetSlotsPerHost) {
  offer("localhost\n");
  Proc job(launch({"--host-discovery-script", discovery(), "--slots-per-host", "2"}, "echo size=$BARESGD_SIZE"));
  ASSERT_EQ(job.code(60), 0) << job.err();
  EXPECT_TRUE(contains(job.err(), "launch: elastic start 1: 2 ranks on localhost:2\n")) << job.err();
}

TEST_F(LaunchElastic, BadDiscoveryIsOneLineAndStartsNothing) {
  const std::string rank = "echo started";
  offer("localhost:2\nlocalhost:x\n");
  Proc bad_line(launch({"--host-discovery-script", discovery()}, rank));
  EXPECT_EQ(bad_line.code(60), 1);
  EXPECT_EQ(bad_line.err(), "launch: --host-discovery-script " + discovery() +
                                ": line 2: localhost:x: bad slot count 'x' for host 'localhost' (need a whole number "
                                ">= 1)\n");
  Proc failing(launch({"--host-discovery-script", "echo no inventory >&2; exit 3"}, rank));
  EXPECT_EQ(failing.code(60), 1);
  EXPECT_EQ(failing.err(),
            "launch: --host-discovery-script echo no inventory >&2; exit 3 exited with status 3: no "
            "inventory\n");
  Proc hanging(launch({"--host-discovery-script", "sleep 30", "--start-timeout", "1"}, rank));
  EXPECT_EQ(hanging.code(60), 1);
  EXPECT_EQ(hanging.err(), "launch: --host-discovery-script sleep 30: timed out after 1.00 s\n");
  for (Proc* p : {&bad_line, &failing, &hanging}) EXPECT_FALSE(contains(p->out(), "started")) << p->out();
}

TEST_F(LaunchElastic, TooFewSlotsWaitThenFailNamingThem) {
  offer("");
  Proc job(
      launch({"--host-discovery-script", discovery(), "--min-np", "2", "--elastic-timeout", "1.5"}, "echo started"));
  EXPECT_EQ(job.code(60), 1);
  EXPECT_EQ(job.err(),
            "launch: waiting for usable slots: 0 usable slots (none), --min-np 2\n"
            "launch: the job cannot start: 0 usable slots (none), --min-np 2 for --elastic-timeout 1.5 s\n");
  offer("localhost:1\n");
  Proc small(
      launch({"--host-discovery-script", discovery(), "--min-np", "2", "--elastic-timeout", "1"}, "echo started"));
  EXPECT_EQ(small.code(60), 1);
  EXPECT_TRUE(contains(small.err(),
                       "launch: the job cannot start: 1 usable slots (localhost:1), --min-np 2 for "
                       "--elastic-timeout 1 s\n"))
      << small.err();
  EXPECT_FALSE(contains(small.out(), "started"));
}

// One slot at first; its rank offers a second slot and fails; the restart runs on two.
TEST_F(LaunchElastic, ARestartRunsOnTheSlotsDiscoveredThen) {
  offer("localhost:1\n");
  const std::string rank = "if [ \"$BARESGD_SIZE\" = 1 ]; then echo localhost:2 > " + dir_ +
                           "/hosts; exit 1; fi; echo rank=$BARESGD_RANK size=$BARESGD_SIZE";
  Proc job(launch({"--host-discovery-script", discovery()}, rank));
  ASSERT_EQ(job.code(60), 0) << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 1 rank on localhost:1\n")) << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("launch: elastic restart 1 in 1 s after rank 0 \\(localhost, pid "
                                                "\\d+\\) exited with status 1; starting from scratch \\(no "
                                                "--checkpoint-dir\\)\n")))
      << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 2: 2 ranks on localhost:2 (was 1)\n")) << err;
  EXPECT_TRUE(contains(job.out(), "rank=1 size=2")) << job.out();
}

TEST_F(LaunchElastic, MaxRestartsBoundsAnElasticJob) {
  offer("localhost:1\n");
  Proc job(launch({"--host-discovery-script", discovery(), "--max-restarts", "1"}, "exit 7"));
  EXPECT_EQ(job.code(60), 7);
  const std::string err = job.err();
  EXPECT_EQ(count_of(err, "launch: elastic restart "), 1) << err;
  EXPECT_TRUE(contains(err, "1 restart used (--max-restarts 1), the job fails")) << err;
}

// ---- over ssh: the test hosts of tests/test_hosts.sh (hpc01, hpc03; hpc02 never answers) ------

class LaunchElasticRemote : public TestHostsFixture<LaunchElastic> {
 protected:
  std::vector<std::string> on(const std::string& hosts, std::vector<std::string> flags) {
    return cat({"-H", hosts, "-F", cfg()}, flags);
  }
};

// hpc03's ranks always fail; hpc01's wait (the stop kills them) unless the world is 2.
TEST_F(LaunchElasticRemote, AHostWhoseRanksFailTwiceIsBlacklistedAndTheJobFinishesOnTheOther) {
  const std::string rank =
      "if [ \"$BARESGD_SIZE\" = 2 ]; then echo done on $BARESGD_HOSTNAME rank $BARESGD_RANK; exit 0; fi; "
      "if [ \"$BARESGD_HOSTNAME\" = hpc03 ]; then exit 1; fi; sleep 60";
  Proc job(launch(on("hpc01:2,hpc03:2", {"--min-np", "2"}), rank));
  ASSERT_EQ(job.code(120), 0) << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 4 ranks on hpc01:2, hpc03:2\n")) << err;
  EXPECT_EQ(count_of(err, "launch: elastic restart "), 2) << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("launch: host hpc03 blacklisted \\(its ranks failed 2 times, last: "
                                                "rank [23] \\(hpc03, pid \\d+\\) exited with status 1\\); it gets no "
                                                "ranks for the rest of the job\n")))
      << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 3: 2 ranks on hpc01:2 (was 4)\n")) << err;
  EXPECT_TRUE(contains(job.out(), "done on hpc01 rank 1")) << job.out();
}

// --blacklist-cooldown-range 1 1: hpc03's rank fails in the first two starts (a counter file both
// test hosts see), which blacklists hpc03 for 1 s; the second restart's 2 s backoff outlasts it, so
// the third start has hpc03 back (one line says so) and the job finishes on both hosts.
TEST_F(LaunchElasticRemote, ABlacklistedHostIsBackAfterItsCooldown) {
  const std::string count = dir_ + "/hpc03-starts";
  const std::string rank = "if [ \"$BARESGD_HOSTNAME\" = hpc03 ]; then echo x >> " + count + "; [ $(wc -l < " + count +
                           ") -gt 2 ] || exit 1; fi; echo done on $BARESGD_HOSTNAME";
  Proc job(launch(on("hpc01:1,hpc03:1", {"--min-np", "1", "--blacklist-cooldown-range", "1", "1"}), rank));
  ASSERT_EQ(job.code(120), 0) << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 2 ranks on hpc01:1, hpc03:1\n")) << err;
  EXPECT_TRUE(
      std::regex_search(err, std::regex("launch: host hpc03 blacklisted \\(its ranks failed 2 times, last: "
                                        "rank 1 \\(hpc03, pid \\d+\\) exited with status 1\\); it gets no "
                                        "ranks for 1.0 s \\(blacklisting 1, --blacklist-cooldown-range 1 1\\)\n")))
      << err;
  EXPECT_TRUE(contains(err, "launch: host hpc03 is usable again after its 1.0 s blacklist cooldown\n")) << err;
  EXPECT_EQ(count_of(err, "launch: elastic restart "), 2) << err;
  EXPECT_FALSE(contains(err, "1 rank on")) << "the job never shrank: " << err;
  EXPECT_TRUE(contains(job.out(), "done on hpc03")) << job.out();
}

// A cooldown longer than the restart's backoff (3 s against 2 s): the third start runs on hpc01
// alone, and the running job, polling its -H hosts, lets hpc03 back (its line said); without
// --checkpoint-dir it says it does not grow and finishes on its 1 rank (which runs until the test
// has seen that line: its go file).
TEST_F(LaunchElasticRemote, AHostWhoseCooldownEndsWhileTheJobRunsIsBackForTheRunningJob) {
  const std::string go = dir_ + "/go";
  const std::string rank =
      "if [ \"$BARESGD_HOSTNAME\" = hpc03 ]; then exit 1; fi; [ \"$BARESGD_SIZE\" = 1 ] || exec sleep 60; " +
      testutil::sh_wait_for(go) + "echo done alone";
  const std::vector<std::string> flags = {"--min-np", "1", "--blacklist-cooldown-range", "3", "3"};
  Proc job(cat({"/usr/bin/env", "BARESGD_ELASTIC_POLL_MS=200", launch_, "--gloo"},
               cat(on("hpc01:1,hpc03:1", flags), {"/bin/sh", "-c", rank, marker_})));
  EXPECT_GE(job.wait_for(std::regex("the job does not grow without --checkpoint-dir"), 120, true, Clock::now()), 0)
      << job.err();
  ASSERT_TRUE(testutil::touch_file(go));
  ASSERT_EQ(job.code(120), 0) << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(contains(err, "it gets no ranks for 3.0 s (blacklisting 1, --blacklist-cooldown-range 3 3)\n")) << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 3: 1 rank on hpc01:1 (was 2)\n")) << err;
  const size_t back = err.find("launch: host hpc03 is usable again after its 3.0 s blacklist cooldown\n");
  ASSERT_NE(back, std::string::npos) << err;
  EXPECT_GT(back, err.find("elastic start 3:")) << "back while the third start ran: " << err;
  EXPECT_TRUE(contains(err,
                       "launch: elastic growth: the -H hosts give hpc03:1; the job does not grow without "
                       "--checkpoint-dir"))
      << err;
  EXPECT_TRUE(contains(job.out(), "done alone")) << job.out();
}

TEST_F(LaunchElasticRemote, AHostThatDoesNotAnswerIsBlacklistedAtTheStart) {
  Proc job(launch(on("hpc01:2,hpc02:2", {"--min-np", "2", "--start-timeout", "20"}), "echo size=$BARESGD_SIZE"));
  ASSERT_EQ(job.code(120), 0) << job.err();
  const std::string err = job.err();
  EXPECT_TRUE(
      std::regex_search(err, std::regex("launch: host hpc02 blacklisted \\(cannot reach it over ssh: [^\n]+\\); "
                                        "it gets no ranks for the rest of the job\n")))
      << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 2 ranks on hpc01:2\n")) << err;
  EXPECT_TRUE(contains(job.out(), "size=2")) << job.out();
}

TEST_F(LaunchElasticRemote, BelowMinNpAfterABlacklistTheJobFailsNamingTheSlots) {
  Proc job(launch(on("hpc01:2,hpc02:2", {"--min-np", "3", "--start-timeout", "20"}), "echo started"));
  EXPECT_EQ(job.code(120), 1);
  const std::string err = job.err();
  EXPECT_TRUE(contains(err,
                       "launch: the job cannot run: 2 usable slots (hpc01:2; blacklisted: hpc02), --min-np 3 "
                       "(-H hosts; a --host-discovery-script could add more)\n"))
      << err;
  EXPECT_FALSE(contains(job.out(), "started"));
}

// root and every live pid below it (launcher/proctree's /proc parent walk), root first.
std::vector<pid_t> process_tree(pid_t root) {
  std::vector<pid_t> tree = {root};
  for (pid_t p : descendants_of(root)) tree.push_back(p);
  return tree;
}

// 4 ranks of ./train over hpc01:2,hpc03:2 with --min-np 2; once a checkpoint exists hpc03's sshd
// and every session it serves are killed for good: hpc03's agents lose their launcher and kill
// their ranks, the launcher names the lost host, blacklists it, and the job resumes from the
// checkpoint on hpc01's 2 slots, where the interrupted epoch goes on over 2 ranks. It exits 0, and
// the --sample-record shows every sample of each epoch trained exactly once.
TEST_F(LaunchElasticRemote, AHostLostForGoodFinishesOnTheOtherSeeingEverySampleOnce) {
  ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt", record = dir_ + "/samples";
  write_mnist_subset(data, 16000, 1000);
  const std::vector<std::string> train = {abs_path(testutil::train_bin()),
                                          "--batch-size",
                                          "64",
                                          "--epochs",
                                          "2",
                                          "--log-interval",
                                          "10",
                                          "--data-dir",
                                          data,
                                          "--checkpoint-every",
                                          "4",
                                          "--checkpoint-dir",
                                          ckpt,
                                          "--sample-record",
                                          record};
  Proc job(cat(cat({launch_, "--gloo"}, on("hpc01:2,hpc03:2", {"--min-np", "2", "--heartbeat-timeout", "10"})), train));
  ASSERT_GT(wait_for_checkpoint(job, ckpt, 4, 1, 180), 0) << job.err();
  const std::string pid_text = read_file(hosts_dir() + "/hpc03.pid");
  ASSERT_FALSE(pid_text.empty()) << "no pid file for hpc03's sshd";
  const auto killed = Clock::now();
  for (pid_t p : process_tree(pid_t(std::atoi(pid_text.c_str())))) ::kill(p, SIGKILL);
  const double named = job.wait_for(std::regex("launch: host hpc03 blacklisted"), 300, true, killed);
  const double resumed = job.wait_for(std::regex("launch: elastic start 2: "), 300, true, killed);
  const int code = job.code(300);
  std::cerr << "[ timing ] hpc03 lost for good, --heartbeat-timeout 10: blacklisted after " << named
            << " s, restarted on hpc01 after " << resumed << " s, job done after " << secs_since(killed) << " s\n";
  const std::string err = job.err();
  testhosts::start_in_place();
  ASSERT_EQ(code, 0) << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 1: 4 ranks on hpc01:2, hpc03:2\n")) << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("launch: host hpc03 blacklisted \\([^\n]+\\); it gets no ranks")))
      << err;
  EXPECT_TRUE(contains(err, "launch: elastic start 2: 2 ranks on hpc01:2 (was 4)\n")) << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("train: continuing epoch 1 at sample \\d+ on 2 ranks \\(the "
                                                "checkpoint was written by 4\\)[^\n]*; lr 0.02 \\(--lr x 2\\)")))
      << err;
  auto epochs = samples_by_epoch(record);
  ASSERT_EQ(epochs.size(), 2u) << read_file(record).substr(0, 400);
  for (auto& [epoch, seen] : epochs) {
    EXPECT_EQ(seen.size(), 16000u) << "epoch " << epoch << " skipped samples";
    int twice = 0;
    for (auto& [idx, n] : seen) twice += n != 1;
    EXPECT_EQ(twice, 0) << "epoch " << epoch << ": samples trained more than once";
  }
}

// ---- the flags -----------------------------------------------------------------------------------

TEST(LaunchElasticOptions, HorovodsNamesParse) {
  LaunchOptions o =
      parse_launch_options({"--gloo", "--min-num-proc", "2", "--max-num-proc=4", "--host-discovery-script", "./d.sh",
                            "--slots-per-host", "3", "--elastic-timeout", "5", "./train"});
  EXPECT_EQ(o.elastic.min_np, 2);
  EXPECT_EQ(o.elastic.max_np, 4);
  EXPECT_EQ(o.elastic.discovery_script, "./d.sh");
  EXPECT_EQ(o.elastic.slots_per_host, 3);
  EXPECT_EQ(o.elastic.elastic_timeout_s, 5);
  EXPECT_TRUE(o.elastic.enabled());
  EXPECT_FALSE(parse_launch_options({"-np", "2", "--gloo", "./train"}).elastic.enabled());
}

TEST(LaunchElasticOptions, BadCombinationsAreOneLineErrorsNamingTheFlags) {
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "0", "x"}), "--min-np must be 1..65536 (got 0)");
  EXPECT_EQ(usage_error({"--gloo", "--max-np", "two", "x"}), "--max-np 'two' is not a whole number");
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "3", "-np", "2", "x"}), "--min-np 3 is more than -np 2");
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "3", "--max-np", "2", "x"}), "--min-np 3 is more than --max-np 2");
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "1", "--max-np", "2", "-np", "3", "x"}),
            "-np 3 is more than --max-np 2");
  EXPECT_EQ(usage_error({"--gloo", "-np", "2", "--max-np", "2", "x"}),
            "--max-np needs --min-np or --host-discovery-script (elastic mode)");
  EXPECT_EQ(usage_error({"--mpi", "--min-np", "2", "x"}),
            "--min-np needs --gloo: elastic jobs restart their ranks with a new world size, which mpirun's fixed MPI "
            "world cannot");
  EXPECT_EQ(usage_error({"--gloo", "--host-discovery-script", "d", "--hostfile", "f", "x"}),
            "--host-discovery-script and --hostfile both say where ranks go: pick one");
  EXPECT_EQ(usage_error({"--gloo", "--host-discovery-script", "", "x"}), "--host-discovery-script: empty command");
  EXPECT_EQ(usage_error({"--gloo", "-np", "2", "--slots-per-host", "2", "x"}),
            "--slots-per-host is for hosts a --host-discovery-script prints; with -H give host:slots");
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "1", "--elastic-timeout", "0", "x"}),
            "--elastic-timeout must be > 0 seconds (got 0)");
}

TEST(LaunchElasticOptions, BlacklistCooldownRangeParsesAndBadValuesAreOneLineNamingIt) {
  const std::string f = "--blacklist-cooldown-range";
  LaunchOptions o = parse_launch_options({"--gloo", "--min-np", "1", f, "60", "300", "./train"});
  EXPECT_EQ(o.elastic.cooldown.min_s, 60);
  EXPECT_EQ(o.elastic.cooldown.max_s, 300);
  EXPECT_EQ(o.command, std::vector<std::string>{"./train"});
  EXPECT_FALSE(parse_launch_options({"--gloo", "--min-np", "1", "x"}).elastic.cooldown.given());
  const std::vector<std::string> elastic = {"--gloo", "--min-np", "1", f};
  EXPECT_EQ(usage_error(cat(elastic, {"ten", "300", "x"})), f + " MIN 'ten' is not a whole number of seconds");
  EXPECT_EQ(usage_error(cat(elastic, {"60", "1.5", "x"})), f + " MAX '1.5' is not a whole number of seconds");
  EXPECT_EQ(usage_error(cat(elastic, {"-5", "300", "x"})), f + " MIN must be 1..3600 seconds (got -5)");
  EXPECT_EQ(usage_error(cat(elastic, {"0", "300", "x"})), f + " MIN must be 1..3600 seconds (got 0)");
  EXPECT_EQ(usage_error(cat(elastic, {"60", "3601", "x"})), f + " MAX must be 1..3600 seconds (got 3601)");
  EXPECT_EQ(usage_error(cat(elastic, {"99999999999999999999", "300", "x"})),
            f + " MIN must be 1..3600 seconds (got 99999999999999999999)");
  EXPECT_EQ(usage_error(cat(elastic, {"300", "60", "x"})), f + " MIN 300 is more than MAX 60");
  EXPECT_EQ(usage_error(cat(elastic, {"60"})), f + " needs two values: MIN MAX seconds");
  EXPECT_EQ(usage_error(cat(elastic, {"60", "./train"})), f + " MAX './train' is not a whole number of seconds");
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "1", f + "=60", "300", "x"}),
            f + " takes two words, MIN MAX, not " + f + "=...");
  EXPECT_EQ(usage_error({"--gloo", "-np", "2", f, "60", "300", "x"}),
            f + " needs --min-np or --host-discovery-script (elastic mode)");
}

TEST(LaunchElasticOptions, HorovodElasticTimeoutIsReadAndTheFlagWins) {
  ::setenv("HOROVOD_ELASTIC_TIMEOUT", "7", 1);
  EXPECT_EQ(parse_launch_options({"--gloo", "--min-np", "1", "x"}).elastic.elastic_timeout_s, 7);
  EXPECT_EQ(parse_launch_options({"--gloo", "--min-np", "1", "--elastic-timeout", "3", "x"}).elastic.elastic_timeout_s,
            3);
  ::setenv("HOROVOD_ELASTIC_TIMEOUT", "soon", 1);
  EXPECT_EQ(usage_error({"--gloo", "--min-np", "1", "x"}), "HOROVOD_ELASTIC_TIMEOUT 'soon' is not a number of seconds");
  ::unsetenv("HOROVOD_ELASTIC_TIMEOUT");
}

}  // namespace
