// Tests of the ports a host's Gloo ranks hold (comm/loopback_spread, comm/gloo_handover): the rule
// (local rank r binds base + 256 r), the hint an error gets when an address has no free port, and
// end to end: a 4-rank --gloo job whose ranks each listen on their own address, and, in a private
// network namespace whose ephemeral range is 64 ports, 32 ranks that start, 16 that start on one
// written-out address, and 32 on it that fail naming the address and the range (issue 26 case 2
// in small: 256 ranks on 127.0.0.1 used to hold every port of the default range).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/loopback_spread.h"
#include "tests/fault_harness.h"
#include "tests/go_file.h"
#include "tests/marked_job_test.h"
#include "tests/proc_listeners.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

using namespace faultharness;

namespace {

// ---- The rule. ----

TEST(LoopbackSpread, LocalRankRBindsBasePlus256R) {
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", 0), "127.0.0.1");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", 1), "127.0.1.1");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", 255), "127.0.255.1");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", 256), "127.1.0.1");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", 65535), "127.255.255.1");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.3", 2), "127.0.2.3") << "a fake host keeps its last byte";
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0.1", -1), "127.0.0.1") << "an unknown local rank counts as 0";
}

TEST(LoopbackSpread, OtherAddressesStayAsTheyAre) {
  EXPECT_EQ(loopback_address_for_local_rank("10.1.2.3", 5), "10.1.2.3");
  EXPECT_EQ(loopback_address_for_local_rank("::1", 5), "::1");
  EXPECT_EQ(loopback_address_for_local_rank("hpc01", 5), "hpc01");
  EXPECT_EQ(loopback_address_for_local_rank("127.0.0", 5), "127.0.0");
  EXPECT_TRUE(is_ipv4_loopback("127.200.3.4"));
  EXPECT_FALSE(is_ipv4_loopback("128.0.0.1"));
  EXPECT_FALSE(is_ipv4_loopback("::1"));
  EXPECT_FALSE(is_ipv4_loopback("127.0.0.1 "));
}

TEST(LoopbackSpread, LeavingTheLoopbackNetworkIsRefused) {
  try {
    loopback_address_for_local_rank("127.0.0.1", 65536);
    FAIL() << "127.0.0.1 + 256 x 65536 is 128.0.0.1";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "local rank 65536's loopback address (127.0.0.1 + 256 x 65536) leaves 127.0.0.0/8");
  }
  EXPECT_THROW(loopback_address_for_local_rank("127.255.255.9", 1), std::invalid_argument);
}

TEST(LoopbackSpread, NoFreePortHintNamesTheAddressTheRangeAndTheWayOut) {
  EXPECT_EQ(no_free_port_hint("bind: Address already in use", "127.0.3.1", "32768\t60999\n", false),
            " (no free port on 127.0.3.1: the ephemeral ports, net.ipv4.ip_local_port_range 32768 60999, are all "
            "held)");
  EXPECT_EQ(no_free_port_hint("doorbell connect: Cannot assign requested address", "127.0.0.1", "40000 40063", true),
            " (no free port on 127.0.0.1: the ephemeral ports, net.ipv4.ip_local_port_range 40000 40063, are all "
            "held; every rank on this host shares 127.0.0.1: --network-interface lo gives each its own loopback "
            "address)");
  EXPECT_EQ(no_free_port_hint("bind: Address already in use", "10.0.0.1", "", true),
            " (no free port on 10.0.0.1: the ephemeral ports, net.ipv4.ip_local_port_range unknown, are all held)")
      << "only a loopback address can be spread";
  EXPECT_EQ(no_free_port_hint("Connection refused", "127.0.0.1", "40000 40063", true), "");
}

// ---- End to end. ----

// A real job's test (tests/marked_job_test.h: marker, scratch directory, teardown by marker).
class LoopbackSpreadJob : public MarkedJobTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    MarkedJobTest::SetUp();
  }
  // Runs a `ranks`-rank --gloo job (`flags` for ./train) in a private network namespace whose
  // ephemeral range is the 64 ports 40000-40063.
  testutil::RunResult run_with_64_ports(int ranks, const std::string& flags) const {
    testutil::write_file(dir_ + "/job.sh",
                         "set -u\n"
                         "ip link set lo up || exit 97\n"
                         "sysctl -q -w net.ipv4.ip_local_port_range='40000 40063' || exit 98\n"
                         "exec " +
                             launch_ + " -np " + std::to_string(ranks) + " --gloo " + train_ + " --data-dir " +
                             abs_path("data") + " --max-steps 1 --batch-size 8 --start-timeout 60 " + flags + "\n");
    return testutil::run("unshare --net sh " + dir_ + "/job.sh", 300);
  }
};

// While rank 3 waits for a go file before it starts, ranks 0-2 have opened their gates (before
// their hello): each rank's every IPv4 listener is on its own address, 127.0.r.1.
TEST_F(LoopbackSpreadJob, EachLocalRankListensOnItsOwnLoopbackAddress) {
  const std::string wait = "if [ \"$BARESGD_RANK\" = 3 ]; then " + testutil::sh_wait_for(dir_ + "/go") + "fi; ";
  Proc job({launch_, "-np", "4", "--gloo", "/bin/sh", "-c", wait + "exec \"$0\" \"$@\"", train_, "--data-dir",
            abs_path("data"), "--max-steps", "1", "--batch-size", "8", "--log-interval", "1", "--dump-params",
            dir_ + "/params.bin"});
  std::map<int, std::set<std::string>> listening;  // rank -> its IPv4 listening addresses
  const auto t0 = Clock::now();
  while (job.running() && secs_since(t0) < 120 && listening.size() < 3) {
    for (const auto& [rank, pid] : rank_pids(marker_))
      for (const proclisteners::TcpListener& l : proclisteners::tcp_listeners_of(pid))
        if (!l.v6 && rank < 3) listening[rank].insert(l.ip);
    ::usleep(2000);
  }
  ASSERT_TRUE(testutil::touch_file(dir_ + "/go"));
  EXPECT_EQ(job.code(300), 0) << job.err();
  ASSERT_EQ(listening.size(), 3u) << job.err();
  for (const auto& [rank, ips] : listening)
    EXPECT_EQ(ips, std::set<std::string>{"127.0." + std::to_string(rank) + ".1"}) << "rank " << rank;
  EXPECT_TRUE(contains(job.out(), "[3]<stdout>:Train Epoch: 1")) << job.out();
}

// Before: 16 ranks on 127.0.0.1 in these 64 ports failed in 0.2 s ("bind: Address already in
// use"), as 256 ranks did in the default 28,232: every passive hand-over left a TIME_WAIT socket on
// its pair listener's port. Now the doorbells close with a reset (16 ranks on one written-out
// address start), and each rank's ports are its own (32 ranks start; on one address they fail,
// and the error names the address, the range and the way out).
TEST_F(LoopbackSpreadJob, ThirtyTwoRanksStartWithSixtyFourEphemeralPorts) {
  if (testutil::run("unshare --net true").status != 0)
    BARESGD_SKIP("cannot create a network namespace (unshare --net)");
  const testutil::RunResult spread = run_with_64_ports(32, "");
  EXPECT_EQ(spread.status, 0) << spread.err;
  EXPECT_TRUE(contains(spread.err, "world_size=32 backend=gloo")) << spread.err;

  const testutil::RunResult shared16 = run_with_64_ports(16, "--network-interface 127.0.0.1");
  EXPECT_EQ(shared16.status, 0) << "16 ranks on one address, no TIME_WAIT left by the hand-overs: " << shared16.err;

  const testutil::RunResult shared32 = run_with_64_ports(32, "--network-interface 127.0.0.1");
  EXPECT_NE(shared32.status, 0) << "32 ranks on one address the user wrote out, 64 ports: " << shared32.err;
  EXPECT_TRUE(contains(shared32.err,
                       "(no free port on 127.0.0.1: the ephemeral ports, net.ipv4.ip_local_port_range 40000 40063, "
                       "are all held; every rank on this host shares 127.0.0.1: --network-interface lo gives each "
                       "its own loopback address)"))
      << shared32.err;
}

}  // namespace
