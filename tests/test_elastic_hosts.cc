// Tests for the elastic job's host choice: the --host-discovery-script output parser
// (launcher/host_discovery.h) and the blacklist / world-size policy (launcher/elastic_hosts.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/host_discovery.h"

namespace {

std::string hosts_text(const std::vector<HostSlots>& hosts) {
  std::string s;
  for (const HostSlots& h : hosts) s += (s.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return s;
}

std::string discovery_error(const std::string& text) {
  try {
    parse_discovery_output(text, "./discover.sh", 1);
  } catch (const HostError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(HostDiscovery, HostsAndSlotsInPrintedOrder) {
  EXPECT_EQ(hosts_text(parse_discovery_output("hpc03:2\nhpc01\n\n  hpc02:4  \n", "d", 1)), "hpc03:2,hpc01:1,hpc02:4");
  EXPECT_EQ(hosts_text(parse_discovery_output("a\nb:1\n", "d", 3)), "a:3,b:1");
  EXPECT_EQ(hosts_text(parse_discovery_output("a\r\nb:2\r\n", "d", 1)), "a:1,b:2");
}

TEST(HostDiscovery, NoHostReadyIsAnEmptyList) {
  EXPECT_TRUE(parse_discovery_output("", "d", 1).empty());
  EXPECT_TRUE(parse_discovery_output("\n \n\t\n", "d", 1).empty());
}

TEST(HostDiscovery, BadLinesAreOneLineErrorsNamingScriptAndLine) {
  EXPECT_EQ(discovery_error("a:2\nb:x\n"),
            "--host-discovery-script ./discover.sh: line 2: b:x: bad slot count 'x' for host 'b' (need a whole number "
            ">= 1)");
  EXPECT_EQ(discovery_error("a\n\na:2\n"), "--host-discovery-script ./discover.sh: line 3: host a is printed twice");
  EXPECT_EQ(discovery_error("a,b\n"),
            "--host-discovery-script ./discover.sh: line 1: a,b: one host per line, not a list");
  EXPECT_EQ(discovery_error("-oProxyCommand=x\n"),
            "--host-discovery-script ./discover.sh: line 1: -oProxyCommand=x: host name '-oProxyCommand=x' starts "
            "with '-'");
  EXPECT_EQ(discovery_error("a:0\n"),
            "--host-discovery-script ./discover.sh: line 1: a:0: bad slot count '0' for host 'a' (need a whole number "
            ">= 1)");
  const std::string control = discovery_error("a\rb\n");
  EXPECT_EQ(control.find('\r'), std::string::npos) << control;
  EXPECT_NE(control.find("line 1"), std::string::npos) << control;
}

TEST(ElasticHosts, NextWorldIsTheUsableSlotsCappedByMaxNp) {
  ElasticHosts e({2, 3, 2});
  EXPECT_TRUE(e.update({{"a", 2}, {"b", 2}}));
  EXPECT_EQ(e.next_np(), 3);
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:2,b:1");
  EXPECT_FALSE(e.update({{"a", 2}, {"b", 2}}));
}

TEST(ElasticHosts, OldestHostsKeepTheLowRanks) {
  ElasticHosts e({1, 0, 2});
  e.update({{"b", 1}, {"a", 1}});
  EXPECT_TRUE(e.update({{"c", 2}, {"a", 1}, {"b", 1}}));
  EXPECT_EQ(hosts_text(e.next_hosts()), "b:1,a:1,c:2");
}

TEST(ElasticHosts, RepeatedFailuresBlacklistAHostAndTheWorldShrinks) {
  ElasticHosts e({2, 0, 2});
  e.update({{"a", 2}, {"b", 2}});
  EXPECT_EQ(e.record_failure("b", "rank 3 exited with status 1"), "");
  EXPECT_EQ(e.next_np(), 4);
  EXPECT_EQ(e.record_failure("b", "rank 2 killed by SIGKILL"),
            "launch: host b blacklisted (its ranks failed 2 times, last: rank 2 killed by SIGKILL); it gets no ranks "
            "for the rest of the job");
  EXPECT_TRUE(e.blacklisted("b"));
  EXPECT_EQ(e.next_np(), 2);
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:2");
  EXPECT_EQ(e.record_failure("b", "again"), "") << "one notice per host";
}

TEST(ElasticHosts, AHostThatStoppedAnsweringIsBlacklistedAtOnce) {
  ElasticHosts e({1, 0, 2});
  e.update({{"a", 1}, {"b", 1}});
  EXPECT_EQ(e.record_lost("a", "sent no heartbeat for 10 s"),
            "launch: host a blacklisted (sent no heartbeat for 10 s); it gets no ranks for the rest of the job");
  EXPECT_EQ(hosts_text(e.next_hosts()), "b:1");
  e.update({{"a", 4}, {"b", 1}});
  EXPECT_EQ(hosts_text(e.next_hosts()), "b:1") << "rediscovery does not lift a blacklist";
}

TEST(ElasticHosts, BelowMinNpThereIsNoWorldAndTheReasonSaysWhy) {
  ElasticHosts e({3, 0, 1});
  e.update({{"a", 2}, {"b", 2}});
  e.record_lost("b", "unreachable");
  EXPECT_EQ(e.next_np(), 0);
  EXPECT_TRUE(e.next_hosts().empty());
  EXPECT_EQ(e.describe(), "2 usable slots (a:2; blacklisted: b), --min-np 3");
  EXPECT_TRUE(e.update({{"a", 2}, {"b", 2}, {"c", 1}}));
  EXPECT_EQ(e.next_np(), 3);
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:2,c:1");
}

TEST(ElasticHosts, AHostThatDisappearsFromDiscoveryGetsNoRanks) {
  ElasticHosts e({1, 0, 2});
  e.update({{"a", 1}, {"b", 1}});
  EXPECT_TRUE(e.update({{"b", 1}}));
  EXPECT_EQ(hosts_text(e.next_hosts()), "b:1");
  EXPECT_TRUE(e.update({{"a", 1}, {"b", 1}}));
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:1,b:1") << "a came back: it keeps its place in the order";
}
