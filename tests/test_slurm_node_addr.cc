// test_slurm_node_addr: a Slurm node's address as Slurm knows it — the NodeAddr parser of
// `scontrol -o show node` (comm/slurm_node_addr.h) with every refused input and its message, the
// scontrol shell (comm/slurm_scontrol.h) against fake scontrols in PATH (one that answers, one that
// fails, one that never answers, none at all), which nodes a task asks for
// (comm/slurm_store_plan.h), and the interface a user chose
// (comm/interface_choice.h: --network-interface, else GLOO_SOCKET_IFNAME) with its one-line errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/interface_choice.h"
#include "comm/slurm_node_addr.h"
#include "comm/slurm_scontrol.h"
#include "comm/slurm_store_plan.h"
#include "tests/test_util.h"

namespace {

using Names = std::vector<std::string>;

const char* kTwoNodes =
    "NodeName=node17 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 NodeAddr=10.1.0.17 NodeHostName=node17 "
    "Version=22.05.8 Reason=moved NodeAddr=192.0.2.1 [root@2026-12-06T10:00:00]\n"
    "NodeName=gpu01 Arch=x86_64 NodeAddr=gpu01-ib NodeHostName=gpu01 State=IDLE\n";

std::string parse_error(const std::string& out, const Names& nodes) {
  try {
    parse_scontrol_node_addrs(out, nodes);
  } catch (const SlurmNodeAddrError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SlurmNodeAddr, EachNodeGetsItsNodeAddrInTheOrderAsked) {
  EXPECT_EQ(parse_scontrol_node_addrs(kTwoNodes, {"gpu01", "node17"}), (Names{"gpu01-ib", "10.1.0.17"}));
  EXPECT_EQ(parse_scontrol_node_addrs(kTwoNodes, {"node17"}), Names{"10.1.0.17"});
  // The free text of Reason cannot move it: the first NodeAddr= word counts.
  EXPECT_EQ(parse_scontrol_node_addrs(kTwoNodes, {"node17", "node17"}), (Names{"10.1.0.17", "10.1.0.17"}));
  // scontrol's warnings on other lines are ignored; a line must start with NodeName=.
  EXPECT_EQ(parse_scontrol_node_addrs(
                "scontrol: warning: x\n  NodeName=a NodeAddr=9.9.9.9\nNodeName=a NodeAddr=1.2.3.4", {"a"}),
            Names{"1.2.3.4"});
}

TEST(SlurmNodeAddr, RefusedOutputsAreOneLineNamingTheNode) {
  EXPECT_EQ(parse_error(kTwoNodes, {"node18"}),
            "scontrol does not show node node18 (scontrol printed 'NodeName=node17 Arch=x86_64 CoresPerSocket=1 "
            "CPUAlloc=0 CPUTot=4 NodeAddr=10.1.0.17 NodeHostName=node17 Version=22.05.8 Reason=moved "
            "NodeAddr=192.0.2.1 [root@20...')");
  EXPECT_EQ(parse_error("", {"node17"}), "scontrol does not show node node17 (scontrol printed nothing)");
  EXPECT_EQ(parse_error("NodeName=node17 State=IDLE\n", {"node17"}), "scontrol shows node node17 without a NodeAddr");
  EXPECT_EQ(parse_error("NodeName=n NodeAddr=1.1.1.1\nNodeName=n NodeAddr=2.2.2.2\n", {"n"}),
            "scontrol shows node n twice, with NodeAddr 1.1.1.1 and 2.2.2.2");
  EXPECT_EQ(parse_error("NodeName=n NodeAddr= State=IDLE\n", {"n"}),
            "scontrol shows node n with NodeAddr '', which is not an address or host name");
  EXPECT_EQ(parse_error("NodeName=n NodeAddr=a;b\n", {"n"}),
            "scontrol shows node n with NodeAddr 'a;b', which is not an address or host name");
  EXPECT_EQ(parse_error("NodeName=n NodeAddr=a\tb\n", {"n"}),
            "scontrol shows node n with NodeAddr 'a\\x09b', which is not an address or host name");
  EXPECT_EQ(parse_error("NodeName=n NodeAddr=" + std::string(256, 'a') + "\n", {"n"}).size(),
            std::string("scontrol shows node n with NodeAddr '', which is not an address or host name").size() + 255);
}

// A fake scontrol first in PATH for the life of the object: body is its shell script; it records
// its arguments in DIR/args.
class FakeScontrol {
 public:
  explicit FakeScontrol(const std::string& body) : dir_(testutil::make_temp_dir("fake_scontrol")) {
    testutil::write_file(dir_ + "/scontrol", "#!/bin/sh\necho \"$@\" > " + dir_ + "/args\n" + body);
    ::chmod((dir_ + "/scontrol").c_str(), 0755);
    const char* path = std::getenv("PATH");
    old_path_ = path ? path : "";
    ::setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
  }
  ~FakeScontrol() {
    ::setenv("PATH", old_path_.c_str(), 1);
    testutil::run("rm -rf " + dir_);
  }
  std::string args() const { return testutil::read_file(dir_ + "/args"); }
  std::string dir() const { return dir_; }

 private:
  std::string dir_, old_path_;
};

std::string scontrol_error(const Names& nodes, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  try {
    slurm_node_ipv4s(nodes, timeout);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SlurmScontrol, OneCallForAllNodesAndLiteralsStay) {
  FakeScontrol fake(std::string("printf '%s' '") + kTwoNodes + "' | sed 's/gpu01-ib/localhost/'\n");
  EXPECT_EQ(slurm_node_ipv4s({"node17", "gpu01"}, std::chrono::seconds(20)), (Names{"10.1.0.17", "127.0.0.1"}));
  EXPECT_EQ(fake.args(), "-o show node node17,gpu01\n");
}

TEST(SlurmScontrol, FailureTimeoutAndAbsenceAreOneLine) {
  {
    FakeScontrol fake("echo 'slurm_load_node error: Invalid node name specified' >&2\nexit 1\n");
    EXPECT_EQ(scontrol_error({"node17"}),
              "scontrol -o show node node17 failed (exit 1: slurm_load_node error: Invalid node name specified)");
  }
  {
    FakeScontrol fake("echo $$ > \"$(dirname \"$0\")/pid\"\nexec sleep 60\n");
    EXPECT_EQ(scontrol_error({"node17"}, std::chrono::milliseconds(300)),
              "scontrol -o show node node17: no answer within 0.3 s (is slurmctld reachable from this node?)");
    const std::string pid = testutil::read_file(fake.dir() + "/pid");
    ASSERT_FALSE(pid.empty());
    const char state = testutil::process_state(std::atol(pid.c_str()));
    EXPECT_TRUE(state == 0) << "the timed-out scontrol (pid " << pid << ") is still there, state " << state;
  }
  {
    FakeScontrol fake("echo 'NodeName=node17 NodeAddr=no-such-host.invalid'\n");
    EXPECT_EQ(scontrol_error({"node17"})
                  .rfind("node node17's NodeAddr no-such-host.invalid does not resolve to an "
                         "IPv4 address: ",
                         0),
              0u)
        << scontrol_error({"node17"});
  }
  {
    FakeScontrol fake("echo 'NodeName=other NodeAddr=1.2.3.4'\n");
    EXPECT_EQ(scontrol_error({"node17"}),
              "scontrol -o show node node17: scontrol does not show node node17 (scontrol printed 'NodeName=other "
              "NodeAddr=1.2.3.4')");
  }
  const char* path = std::getenv("PATH");
  const std::string old = path ? path : "";
  ::setenv("PATH", "/nonexistent", 1);
  const std::string missing = scontrol_error({"node17"});
  ::setenv("PATH", old.c_str(), 1);
  EXPECT_EQ(missing,
            "scontrol -o show node node17: cannot run scontrol: No such file or directory (it is not in PATH; it "
            "comes with Slurm's client tools)");
}

TEST(InterfaceChoice, FlagFirstThenGlooSocketIfname) {
  EXPECT_TRUE(choose_interface("", nullptr).empty());
  EXPECT_TRUE(choose_interface("", "").empty());
  EXPECT_EQ(choose_interface("lo", "eth0").named(), "--network-interface lo");
  EXPECT_EQ(choose_interface("", "eth0").named(), "GLOO_SOCKET_IFNAME=eth0");
  try {
    choose_interface("", "eth0,eth1");
    ADD_FAILURE() << "a list was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "GLOO_SOCKET_IFNAME=eth0,eth1 lists several interfaces; baresgd binds one: name one (or pass "
                 "--network-interface)");
  }
  EXPECT_EQ(choose_interface("lo", "eth0,eth1").named(), "--network-interface lo");  // the flag decides
}

TEST(InterfaceChoice, AddressOfANameOrALiteralAndOneLineForAnUnknownName) {
  EXPECT_EQ(interface_choice_ipv4(choose_interface("", "lo")), "127.0.0.1");
  EXPECT_EQ(interface_choice_ipv4(choose_interface("127.0.0.5", nullptr)), "127.0.0.5");
  try {
    interface_choice_ipv4(choose_interface("", "nosuchif7"));
    ADD_FAILURE() << "an unknown interface was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "GLOO_SOCKET_IFNAME=nosuchif7: no such network interface on this host");
  }
}

// The rule of comm/slurm_store.h: the chosen interface only on one node; else rank 0's NodeAddr,
// and on several nodes this task's own NodeAddr too, in the same scontrol call.
TEST(SlurmAddrQuery, InterfaceOnOneNodeElseNodeAddrsFromOneCall) {
  const SlurmStorePlan one = plan_slurm_store("7", "0", "node17", "2", 2);
  const SlurmStorePlan two = plan_slurm_store("7", "0", "node[17-18]", "2(x2)", 4);
  ASSERT_TRUE(one.one_node);
  ASSERT_FALSE(two.one_node);
  EXPECT_TRUE(slurm_addr_query(one, true, "node17").use_interface);
  SlurmAddrQuery q = slurm_addr_query(one, false, "node17");
  EXPECT_FALSE(q.use_interface);
  EXPECT_EQ(q.nodes, Names{"node17"});
  EXPECT_EQ(q.own, -1);                       // one node: Gloo stays on loopback
  q = slurm_addr_query(two, true, "node18");  // the interface cannot move the store off NodeAddr here
  EXPECT_FALSE(q.use_interface);
  EXPECT_EQ(q.nodes, (Names{"node17", "node18"}));
  EXPECT_EQ(q.own, 1);
  q = slurm_addr_query(two, false, "node17");
  EXPECT_EQ(q.nodes, Names{"node17"});
  EXPECT_EQ(q.own, 0);
  q = slurm_addr_query(two, false, "");
  EXPECT_EQ(q.nodes, Names{"node17"});
  EXPECT_EQ(q.own, -1);
}

// ./launch binds its store to GLOO_SOCKET_IFNAME's interface when --network-interface is not
// given: an unknown one, or a list, is one line and nothing starts.
TEST(InterfaceChoice, LaunchNamesABadGlooSocketIfnameInOneLine) {
  const std::string cmd = testutil::launch_bin() + " -np 2 --gloo sh -c 'echo started'";
  testutil::RunResult bad = testutil::run("GLOO_SOCKET_IFNAME=nosuchif7 " + cmd, 60);
  EXPECT_NE(bad.status, 0);
  EXPECT_EQ(bad.out.find("started"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.err, "launch: GLOO_SOCKET_IFNAME=nosuchif7: no such network interface on this host\n");
  testutil::RunResult list = testutil::run("GLOO_SOCKET_IFNAME=lo,eth0 " + cmd, 60);
  EXPECT_NE(list.status, 0);
  EXPECT_EQ(list.err,
            "launch: GLOO_SOCKET_IFNAME=lo,eth0 lists several interfaces; baresgd binds one: name one (or pass "
            "--network-interface)\n");
  testutil::RunResult lo = testutil::run("GLOO_SOCKET_IFNAME=lo " + cmd, 60);
  EXPECT_EQ(lo.status, 0) << lo.err;
  EXPECT_NE(lo.out.find("started"), std::string::npos) << lo.out;
}

}  // namespace
