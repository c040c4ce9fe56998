// test_netns_hosts: the 4-rank 2-host jobs on test hosts that are separate machines on a network
// (tests/netns_hosts.sh: one network namespace per host, each with its own sshd, joined by an
// emulated link, tests/tool_tap_link): the link exists and is the only route, each host has its own
// CPU, the link's delay and bandwidth show in the round trip, Gloo
// and Open MPI train over it to the bits of a loopback run (the TwoHosts suite's jobs, README
// command included), and a host whose link is cut is named by the others within --comm-timeout
// while the job exits non-zero and leaves nothing behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

const char kScript[] = "bash tests/netns_hosts.sh ";

// Why network namespaces with tap devices cannot be made here, or "" when they can.
std::string why_no_namespaces() {
  if (geteuid() != 0) return "network namespaces need root";
  struct stat st;
  if (stat("/dev/net/tun", &st) != 0 || !S_ISCHR(st.st_mode)) return "/dev/net/tun is missing (no tap devices)";
  auto r = run("unshare --net true", 30);
  if (r.status != 0) return "cannot create a network namespace (unshare --net: " + r.err + ")";
  return "";
}

// Minimum round trip in ms of pings from nsA to nsB, or -1: `ping -c 5` by default; with
// kBigPing, `ping -c 3 -s 60000` (60 KB each way, in 41 IP fragments).
const char kBigPing[] = "-c 3 -s 60000";
double min_rtt_ms(const std::string& dir, const std::string& ping_args = "-c 5") {
  auto r = run(kScript + ("exec " + dir) + " ping " + ping_args + " -i 0.2 -W 2 10.213.0.2", 60);
  std::smatch m;
  static const std::regex re(R"(rtt min/avg/max/mdev = ([0-9.]+)/)");
  if (r.status != 0 || !std::regex_search(r.out, m, re)) return -1;
  return std::stod(m[1]);
}

// The pids in host's namespace other than the infrastructure's (its sshd listener; the link
// process lives in the root namespace).
std::set<std::string> job_pids_in(const std::string& dir, const std::string& ns, const std::string& host) {
  std::set<std::string> infra = {testutil::read_file(dir + "/sshd-" + host + ".pid")};
  std::set<std::string> left;
  std::istringstream in(run("ip netns pids " + ns, 30).out);
  std::string pid;
  while (in >> pid)
    if (!infra.count(pid + "\n") && !infra.count(pid)) left.insert(pid);
  return left;
}

class NetnsHosts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason = new std::string(why_no_namespaces());
    dir = new std::string(testutil::make_temp_dir("netns"));
    if (!skip_reason->empty()) return;
    auto r = run(kScript + ("up " + *dir), 120);
    started = r.status == 0;
    if (!started) *start_error = r.out + r.err;
  }
  static void TearDownTestSuite() {
    run(kScript + ("down " + *dir), 120);
    std::system(("rm -rf '" + *dir + "'").c_str());
    delete dir;
    delete skip_reason;
  }
  void SetUp() override {
    if (!skip_reason->empty()) BARESGD_SKIP("no namespace hosts: " << *skip_reason);
    ASSERT_TRUE(started) << "namespace hosts did not start (tests/netns_hosts.sh up): " << *start_error;
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
  }
  // The namespace of host ("nsA", "nsB"), read from the script's own line in DIR/sshd-HOST.config.
  static std::string netns(const std::string& host) {
    std::smatch m;
    std::string cfg = testutil::read_file(*dir + "/sshd-" + host + ".config");
    return std::regex_search(cfg, m, std::regex("network namespace (\\S+)")) ? m[1].str() : "";
  }
  // `./launch ARGS` inside nsA's namespace with the hosts' ssh config and Open MPI pinned to the tap.
  static std::string launch_in_nsA(const std::string& args) {
    std::string env = testutil::read_file(*dir + "/env");
    for (char& c : env)
      if (c == '\n') c = ' ';
    return kScript + ("exec " + *dir) + " env " + env + testutil::launch_bin() + " " + args;
  }
  static std::string* dir;
  static std::string* skip_reason;
  static std::string* start_error;  // the script's own words when `up` failed
  static bool started;
};
std::string* NetnsHosts::dir = nullptr;
std::string* NetnsHosts::start_error = new std::string;
std::string* NetnsHosts::skip_reason = nullptr;
bool NetnsHosts::started = false;

TEST_F(NetnsHosts, TheLinkIsTheOnlyRoute) {
  EXPECT_GT(min_rtt_ms(*dir), 0) << "nsA cannot ping nsB over the link";
  for (std::string host : {"nsA", "nsB"}) {
    const std::string ns = netns(host);
    ASSERT_FALSE(ns.empty());
    auto links = run("ip -n " + ns + " -o link show", 30);
    ASSERT_EQ(links.status, 0) << links.err;
    EXPECT_EQ(std::count(links.out.begin(), links.out.end(), '\n'), 2) << host << " has more than lo and bsgd0:\n"
                                                                       << links.out;
    EXPECT_NE(links.out.find("bsgd0"), std::string::npos) << links.out;
    EXPECT_EQ(run("ip -n " + ns + " route show default", 30).out, "") << host << " has a default route";
    auto out = run("ip -n " + ns + " route get 1.1.1.1", 30);
    EXPECT_NE(out.status, 0) << host << " routes outside its /24: " << out.out;
    auto host_name = run(kScript + ("exec " + *dir) + " ssh -F " + *dir + "/ssh_config " + host + " hostname", 60);
    EXPECT_EQ(host_name.out, host + "\n") << host_name.err;
  }
}

// Every rank runs on the host it is tagged with: gethostname() inside a host is its sshd's own
// UTS name, so a rank started anywhere else would say so.
TEST_F(NetnsHosts, EveryRankRunsOnItsHost) {
  for (std::string mode : {"--gloo", "--mpi"}) {
    auto r = run(launch_in_nsA("-np 4 " + mode + " -H nsA:2,nsB:2 --tag-format host /bin/hostname"), 120);
    ASSERT_EQ(r.status, 0) << mode << ": " << r.err;
    for (std::string line :
         {"[nsA:0]<stdout>:nsA\n", "[nsA:1]<stdout>:nsA\n", "[nsB:2]<stdout>:nsB\n", "[nsB:3]<stdout>:nsB\n"})
      EXPECT_NE(r.out.find(line), std::string::npos) << mode << ": no " << line << r.out;
  }
}

// A missing program, a missing link tool and a bad option are one line naming them; nothing is
// created.
TEST_F(NetnsHosts, AMissingComponentIsOneLine) {
  const std::string bin = testutil::make_temp_dir("netns-bin"), d = testutil::make_temp_dir("netns-none");
  std::string links;
  for (std::string prog :
       {"dirname", "sha256sum", "cut", "id", "ip", "ssh", "ssh-keygen", "unshare", "ping", "tr", "head"})
    links += "ln -s \"$(command -v " + prog + ")\" " + bin + "/ && ";
  ASSERT_EQ(run(links + "true", 30).status, 0);
  const std::string before = run("ip netns list", 30).out;
  auto r = run("PATH=" + bin + " /bin/bash tests/netns_hosts.sh up " + d, 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "netns_hosts.sh: taskset not found (apt-get install util-linux; .ci/install-deps installs it)\n");
  r = run("BARESGD_TOOLS=" + bin + " " + kScript + ("up " + d), 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "netns_hosts.sh: " + bin + "/tool_tap_link not found (run: make test-build)\n");
  r = run(kScript + ("up " + d) + " --delay soon", 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "netns_hosts.sh: --delay 'soon' is not a number of milliseconds\n");
  r = run(kScript + ("up " + d) + " --mtu 100", 60);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "netns_hosts.sh: --mtu '100' is not 576 to 65521 bytes\n");
  EXPECT_EQ(run("ip netns list", 30).out, before) << "a failed up left a namespace";
  auto down = run(kScript + ("down " + d), 60);
  EXPECT_EQ(down.status, 0) << "down of hosts never made: " << down.err;
  std::system(("rm -rf '" + bin + "' '" + d + "'").c_str());
}

// Each host's processes run on their own CPU (the second host on another one when the machine has
// two), so a rank sees one CPU and computes with one thread; `exec` runs on nsA's.
TEST_F(NetnsHosts, EachHostHasItsOwnCpu) {
  const int cpus = std::atoi(run("nproc", 10).out.c_str());
  std::string seen[2];
  for (int i = 0; i < 2; ++i) {
    const std::string host = i == 0 ? "nsA" : "nsB";
    auto r = run(kScript + ("exec " + *dir) + " ssh -F " + *dir + "/ssh_config " + host +
                     " 'nproc; taskset -cp $$ | sed \"s/.*: //\"'",
                 60);
    ASSERT_EQ(r.status, 0) << r.err;
    std::istringstream in(r.out);
    std::string n;
    in >> n >> seen[i];
    EXPECT_EQ(n, "1") << host << " sees more than one CPU";
  }
  if (cpus >= 2) {
    EXPECT_NE(seen[0], seen[1]) << "nsA and nsB share CPU " << seen[0];
  }
  EXPECT_EQ(run(kScript + ("exec " + *dir) + " nproc", 10).out, "1\n") << "exec is not on nsA's CPU";
  auto rank =
      run(launch_in_nsA("-np 2 --gloo -H nsA:1,nsB:1 env BARESGD_TIMING=1 " + testutil::train_bin() + " --max-steps 2"),
          300);
  ASSERT_EQ(rank.status, 0) << rank.err;
  EXPECT_NE(rank.err.find("[0]<stderr>:timing: rank=0 "), std::string::npos) << rank.err;
  EXPECT_TRUE(std::regex_search(rank.err, std::regex(R"(\[1\]<stderr>:timing: rank=1 .* threads=1 \([^)]+\)\n)")))
      << rank.err;
}

// The link process has no network of its own (the root namespace's, where it opens nothing), and
// runs the link tool (down stopping it is DelayAndBandwidthShowInTheRoundTrip's).
TEST_F(NetnsHosts, TheLinkProcessRunsOutsideTheHosts) {
  const std::string pid = testutil::read_file(*dir + "/link.pid");
  ASSERT_FALSE(pid.empty());
  const std::string p = pid.substr(0, pid.find('\n'));
  EXPECT_EQ(run("readlink /proc/" + p + "/ns/net", 10).out, run("readlink /proc/$$/ns/net", 10).out)
      << "the link process is not in this test's (the root) network namespace";
  EXPECT_NE(testutil::read_file("/proc/" + p + "/cmdline").find("tool_tap_link"), std::string::npos);
}

// --delay adds to each way and --bandwidth to every byte: a 60 KB ping at 10 MB/s spends 6 ms on
// the link each way. down stops the link, which then reports the frames it carried.
TEST_F(NetnsHosts, DelayAndBandwidthShowInTheRoundTrip) {
  const std::string slow = testutil::make_temp_dir("netns-slow");
  auto up = run(kScript + ("up " + slow) + " --delay 20 --bandwidth 10M", 120);
  ASSERT_EQ(up.status, 0) << up.err;
  const double fast_rtt = min_rtt_ms(*dir), slow_rtt = min_rtt_ms(slow);
  const double fast_big = min_rtt_ms(*dir, kBigPing), slow_big = min_rtt_ms(slow, kBigPing);
  std::printf(
      "round trip nsA -> nsB: %.2f ms (60 KB: %.2f ms), with --delay 20 --bandwidth 10M: %.2f ms (60 KB: %.2f ms)\n",
      fast_rtt, fast_big, slow_rtt, slow_big);
  std::fflush(stdout);  // before run() forks again
  // Lower bounds: what the link must add. Upper bounds only catch a delay or a transmission time
  // counted twice (the times themselves are printed above, not asserted: a loaded machine adds to them).
  EXPECT_GT(slow_rtt, 40.0) << "--delay 20 (each way) did not reach the link";
  EXPECT_LT(slow_rtt, 2 * 40.0) << "--delay 20 (each way) counted twice";
  EXPECT_GT(slow_big, 40.0 + 2 * 6.0) << "60 KB at 10 MB/s did not take 6 ms each way";
  EXPECT_LT(slow_big, 2 * (40.0 + 2 * 6.0)) << "the delay or the 60 KB's time at 10 MB/s counted twice";
  EXPECT_GT(fast_rtt, 0);
  EXPECT_LT(fast_rtt, slow_rtt);
  EXPECT_GT(fast_big, 0);
  EXPECT_LT(fast_big, slow_big - 40.0) << "the unlimited link moved 60 KB no faster than the 10 MB/s one";
  const std::string link_pid = testutil::read_file(slow + "/link.pid");
  auto down = run(kScript + ("down " + slow), 120);
  EXPECT_EQ(down.status, 0) << down.err;
  EXPECT_FALSE(link_pid.empty());
  // Gone, or a zombie when this test is the subreaper of the setsid'd link process.
  const char state = testutil::process_state(std::atol(link_pid.c_str()));
  EXPECT_TRUE(state == 0 || state == 'Z') << "down left the link process " << link_pid << ", state " << state;
  const std::string log = testutil::read_file(slow + "/link.log");
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(tool_tap_link: A -> B: [1-9]\d* frames, \d+ bytes; 0 dropped)")))
      << log;
  auto again = run(kScript + ("down " + slow), 120);
  EXPECT_EQ(again.status, 0) << "down is not idempotent: " << again.err;
  EXPECT_NE(run("ip netns list", 30).out.find(netns("nsA")), std::string::npos) << "the other hosts went too";
  std::system(("rm -rf '" + slow + "'").c_str());
}

// Every line tagged with its host; ranks 0,1 on nsA and 2,3 on nsB; >= 93% after the epoch; the
// parameters of every rank bit-equal to rank 0 of the same job on loopback.
void check_equals_loopback(const std::string& mode, const testutil::RunResult& ns, const std::string& dir) {
  ASSERT_EQ(ns.status, 0) << mode << "\n" << ns.out.substr(0, 2000) << ns.err;
  std::istringstream in(ns.out);
  std::string line;
  std::set<std::string> tags;
  static const std::regex tag_re(R"(^\[(ns[AB]):([0-3])\]<stdout>:(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, tag_re)) << mode << ": untagged line: " << line;
    EXPECT_EQ(m[1], std::stoi(m[2]) < 2 ? "nsA" : "nsB") << line;
    tags.insert(m[1].str() + ":" + m[2].str());
  }
  EXPECT_EQ(tags.size(), 4u) << mode;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ns.out, m, std::regex(R"(Accuracy: ([0-9.]+)%)"))) << ns.out;
  std::printf("%s: 4 ranks on nsA:2,nsB:2 over the link, 1 epoch: %s%% in %.1f s\n", mode.c_str(), m[1].str().c_str(),
              ns.seconds);
  std::fflush(stdout);
  EXPECT_GE(std::stod(m[1]), 93.0);
  auto lo = run(testutil::launch_bin() + " -np 4 " + mode + " " + testutil::train_bin() +
                    " --epochs 1 --threads 1 --dump-params " + dir + "/lo.%r.bin",
                900);
  ASSERT_EQ(lo.status, 0) << lo.err;
  const std::string want = testutil::read_file(dir + "/lo.0.bin");
  ASSERT_EQ(want.size(), 21840u * 4);
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(testutil::read_file(dir + "/ns." + std::to_string(r) + ".bin") == want)
        << mode << ": rank " << r << " over the link differs from the loopback run";
}

TEST_F(NetnsHosts, GlooFourRanksOverTheLinkEqualALoopbackRun) {
  // Each rank binds Gloo to its host's tap address (the only address that reaches the other host).
  auto plan = run(launch_in_nsA("--dry-run -np 4 --gloo -H nsA:2,nsB:2 ./train"), 60);
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_TRUE(std::regex_search(plan.out, std::regex(R"(\n0 +nsA .* ssh +10\.213\.0\.1\n)"))) << plan.out;
  EXPECT_TRUE(std::regex_search(plan.out, std::regex(R"(\n3 +nsB .* ssh +10\.213\.0\.2\n)"))) << plan.out;
  auto ns = run(launch_in_nsA("-np 4 --gloo -H nsA:2,nsB:2 --tag-format host " + testutil::train_bin() +
                              " --epochs 1 --threads 1 --dump-params " + *dir + "/ns.%r.bin"),
                900);
  check_equals_loopback("--gloo", ns, *dir);
}

TEST_F(NetnsHosts, MpiFourRanksOverTheLinkEqualALoopbackRun) {
  auto ns = run(launch_in_nsA("-np 4 --mpi -H nsA:2,nsB:2 --tag-format host " + testutil::train_bin() +
                              " --epochs 1 --threads 1 --dump-params " + *dir + "/ns.%r.bin"),
                900);
  check_equals_loopback("--mpi", ns, *dir);
}

TEST_F(NetnsHosts, TheReadmeCommandTagsLikeHorovodrun) {
  // The README's two-host command with the namespace hosts' names, short run.
  auto r = run(launch_in_nsA("-np 4 --gloo -H nsA:2,nsB:2 " + testutil::train_bin() + " --max-steps 1"), 300);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (int k = 0; k < 4; ++k)
    EXPECT_NE(r.out.find("[" + std::to_string(k) + "]<stdout>:Train Epoch: 1 [0/15000 (0%)]"), std::string::npos)
        << r.out;
}

// nsB's tap goes down mid-training: nsA's rank names nsB's within --comm-timeout, the launcher
// names nsB, the job exits non-zero, and no process of the job is left in either namespace. One
// rank per host: with two ranks on nsA, the first to time out may close its Gloo pairs before it
// prints, and its nsA peer then reports that closed connection instead of the cut link.
TEST_F(NetnsHosts, ACutLinkIsNamedWithinTheCommTimeout) {
  const std::string out = *dir + "/cut.out", err = *dir + "/cut.err";
  const std::string job = launch_in_nsA("-np 2 --gloo -H nsA:1,nsB:1 --tag-format host --heartbeat-timeout 10 " +
                                        testutil::train_bin() + " --epochs 3 --log-interval 10 --comm-timeout 5");
  auto r = run("(" + job + " >" + out + " 2>" + err + "; echo $? >" + *dir +
                   "/cut.status) & "
                   "for i in $(seq 1200); do grep -q 'Train Epoch: 1 \\[640/' " +
                   out + " && break; sleep 0.1; done; " + kScript + "link " + *dir + " nsB down; echo cut; wait",
               300);
  const std::string o = testutil::read_file(out), e = testutil::read_file(err);
  run(kScript + ("link " + *dir) + " nsB up", 30);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(o.find("Train Epoch: 1 [640/"), std::string::npos) << "training never started:\n" << o << e;
  EXPECT_EQ(o.find("Test set:"), std::string::npos) << "the link was cut after the first epoch";
  EXPECT_NE(testutil::read_file(*dir + "/cut.status"), "0\n") << "the job succeeded through a cut link";
  EXPECT_TRUE(
      std::regex_search(e, std::regex(R"(rank 0 \(host nsA\): gloo \S+ timed out after 5 s waiting for rank 1)")))
      << e;
  EXPECT_TRUE(std::regex_search(e, std::regex(R"(launch: nsB .*stopping the job)"))) << e;
  // Nothing of the job is left: nsB's ranks stop through their own comm timeout and their agents'
  // heartbeat timeout, the sshd sessions to the vanished client through ClientAlive.
  std::set<std::string> left_a, left_b;
  for (int i = 0; i < 600; ++i) {
    left_a = job_pids_in(*dir, netns("nsA"), "nsA");
    left_b = job_pids_in(*dir, netns("nsB"), "nsB");
    if (left_a.empty() && left_b.empty()) break;
    usleep(100000);
  }
  EXPECT_TRUE(left_a.empty())
      << run("ps -o pid,args -p " + std::string(left_a.empty() ? "1" : *left_a.begin()), 10).out;
  EXPECT_TRUE(left_b.empty())
      << run("ps -o pid,args -p " + std::string(left_b.empty() ? "1" : *left_b.begin()), 10).out;
  EXPECT_GT(min_rtt_ms(*dir), 0) << "the link did not come back up";
}

// cmd with each stderr line prefixed by the time it was read (date +%s.%N); cmd's exit status kept
// (through status_file).
std::string stamped_stderr(const std::string& cmd, const std::string& status_file) {
  return "{ { " + cmd + "; echo $? > " + status_file +
         "; } 2>&1 1>&3 | while IFS= read -r l; do echo \"$(date +%s.%N) " + "$l\"; done >&2; } 3>&1; exit $(cat " +
         status_file + ")";
}

// Issue 11, 1: a host partitioned after its rank finished. nsB's rank exits 0 right after it
// blackholes nsB's route to nsA (blackhole routes, as a partitioned host's would be), so its agent's
// exit report and heartbeats cannot reach the launcher in nsA. The launcher names nsB within the
// heartbeat timeout and stops the job (before heartbeats it waited silently until the link came
// back); nsA's rank, still sleeping, is stopped; nothing of the job is left in either namespace.
TEST_F(NetnsHosts, AHostPartitionedAfterItsRankFinishedIsNamed) {
  const std::string nsb = netns("nsB");
  const std::string stamp = *dir + "/partitioned-at";  // when nsB's rank cut the route (date +%s.%N)
  const std::string rank = "if [ \"$BARESGD_RANK\" = 1 ]; then date +%s.%N > " + stamp +
                           "; ip route add blackhole 10.213.0.1/32; exit 0; fi; sleep 60; echo rank 0 was not stopped";
  const std::string job =
      launch_in_nsA("-np 2 --gloo -H nsA:1,nsB:1 --tag-format host --heartbeat-timeout 4 sh -c '" + rank + "'");
  auto r = run(stamped_stderr(job, *dir + "/status"), 100);
  const double exited = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double cut = std::atof(testutil::read_file(stamp).c_str());
  std::smatch named;
  std::regex_search(r.err, named, std::regex(R"((\d+\.\d+) launch: nsB [^\n]*no heartbeat)"));
  std::cerr << "[ timing ] nsB partitioned after its rank finished, --heartbeat-timeout 4: named "
            << (named.empty() ? -1 : std::atof(named[1].str().c_str()) - cut) << " s, launcher exit " << exited - cut
            << " s after the partition\n";
  const std::string routes = run("ip -n " + nsb + " route show", 30).out;
  run("ip -n " + nsb + " route del blackhole 10.213.0.1/32", 30);
  ASSERT_NE(routes.find("blackhole 10.213.0.1"), std::string::npos) << "nsB's rank did not partition it: " << routes;
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(r.timed_out) << "the launcher waited on the silent host:\n" << r.out << r.err;
  EXPECT_EQ(r.out.find("was not stopped"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(launch: nsB .*no heartbeat for 4 s)"))) << r.err;
  std::set<std::string> left_a, left_b;
  for (int i = 0; i < 600; ++i) {
    left_a = job_pids_in(*dir, netns("nsA"), "nsA");
    left_b = job_pids_in(*dir, nsb, "nsB");
    if (left_a.empty() && left_b.empty()) break;
    usleep(100000);
  }
  EXPECT_TRUE(left_a.empty())
      << run("ps -o pid,args -p " + std::string(left_a.empty() ? "1" : *left_a.begin()), 10).out;
  EXPECT_TRUE(left_b.empty())
      << run("ps -o pid,args -p " + std::string(left_b.empty() ? "1" : *left_b.begin()), 10).out;
  EXPECT_GT(min_rtt_ms(*dir), 0) << "the route did not come back";
}

}  // namespace
