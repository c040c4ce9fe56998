// test_link_model: the emulated link of tests/tool_tap_link.cc (tests/link_model.h) on a fake
// clock: the delay alone, frames queued behind each other at the bandwidth, an idle link starting
// afresh, a full queue dropping, and the tool's command line with each error naming its argument.
#include <gtest/gtest.h>

#include "tests/link_model.h"

namespace {

using link_model::LinkArgs;
using link_model::LinkDirection;
using link_model::LinkSpec;
using link_model::parse_link_args;

constexpr int64_t kMs = 1000000;

LinkSpec spec(int64_t delay_ns, int64_t bytes_per_s, int64_t queue_bytes = int64_t(4) << 20) {
  LinkSpec s;
  s.delay_ns = delay_ns;
  s.bytes_per_s = bytes_per_s;
  s.queue_bytes = queue_bytes;
  return s;
}

TEST(LinkModel, WithoutABandwidthAFrameLeavesAfterTheDelayWhateverItsSize) {
  LinkDirection link(spec(3 * kMs, 0));
  EXPECT_EQ(link.admit(10 * kMs, 60), 13 * kMs);
  EXPECT_EQ(link.admit(10 * kMs, 65536), 13 * kMs);
  EXPECT_EQ(link.admit(11 * kMs, 1 << 30), 14 * kMs) << "an unlimited link has no queue to fill";
  LinkDirection wire(spec(0, 0));
  EXPECT_EQ(wire.admit(5, 1500), 5) << "no delay, no bandwidth: through at once";
}

TEST(LinkModel, FramesArrivingTogetherLeaveOneTransmissionTimeApart) {
  LinkDirection link(spec(2 * kMs, 1000000));  // 1 MB/s: 1000 bytes take 1 ms
  EXPECT_EQ(link.admit(0, 1000), 3 * kMs);
  EXPECT_EQ(link.admit(0, 1000), 4 * kMs);
  EXPECT_EQ(link.admit(0, 500), 4 * kMs + kMs / 2);
  EXPECT_EQ(link.admit(kMs, 1000), 5 * kMs + kMs / 2) << "queued behind the first three";
}

TEST(LinkModel, AFrameOnAnIdleLinkStartsWhenItArrives) {
  LinkDirection link(spec(kMs, 1000000));
  EXPECT_EQ(link.admit(0, 1000), 2 * kMs);
  EXPECT_EQ(link.admit(100 * kMs, 1000), 102 * kMs) << "the earlier frame's transmission does not carry over";
}

TEST(LinkModel, AFullQueueDropsTheFrameAndKeepsTheOthers) {
  LinkDirection link(spec(0, 1000, 65536));  // 1000 B/s: a 64 KiB queue holds 65 s of traffic
  int64_t last = 0;
  for (int i = 0; i < 64; ++i) last = link.admit(0, 1024);
  EXPECT_EQ(last, int64_t(64) * 1024 * 1000000000 / 1000);
  EXPECT_EQ(link.admit(0, 1), -1) << "65536 bytes wait: one more byte overflows";
  EXPECT_EQ(link.admit(1024 * kMs + 1, 1024), last + int64_t(1024) * 1000000000 / 1000)
      << "after 1024 bytes left, a 1024-byte frame fits again, behind the rest";
}

TEST(LinkModel, TheLongestDelayAndSlowestRateDoNotOverflow) {
  LinkDirection link(spec(10000 * kMs, 1, int64_t(1) << 30));
  EXPECT_EQ(link.admit(0, 65536), int64_t(65536) * 1000000000 + 10000 * kMs);
}

TEST(LinkArgsParse, ACompleteCommandLine) {
  LinkArgs a;
  ASSERT_EQ(
      parse_link_args({"--netns-a", "/run/netns/x-a", "--netns-b", "/run/netns/x-b", "--tap", "bsgd0", "--pidfile",
                       "/d/link.pid", "--delay-ms", "0.25", "--bandwidth", "100M", "--queue-bytes", "65536"},
                      &a),
      "");
  EXPECT_EQ(a.netns_a, "/run/netns/x-a");
  EXPECT_EQ(a.netns_b, "/run/netns/x-b");
  EXPECT_EQ(a.tap, "bsgd0");
  EXPECT_EQ(a.pidfile, "/d/link.pid");
  EXPECT_EQ(a.spec.delay_ns, 250000);
  EXPECT_EQ(a.spec.bytes_per_s, 100000000);
  EXPECT_EQ(a.spec.queue_bytes, 65536);
}

TEST(LinkArgsParse, DefaultsAreNoDelayNoLimitAndAFourMegabyteQueue) {
  LinkArgs a;
  ASSERT_EQ(parse_link_args({"--netns-a", "A", "--netns-b", "B", "--tap", "t", "--pidfile", "p"}, &a), "");
  EXPECT_EQ(a.spec.delay_ns, 0);
  EXPECT_EQ(a.spec.bytes_per_s, 0);
  EXPECT_EQ(a.spec.queue_bytes, 4 << 20);
  ASSERT_EQ(parse_link_args({"--netns-a", "A", "--netns-b", "B", "--tap", "t", "--pidfile", "p", "--bandwidth",
                             "12500000", "--delay-ms", "20"},
                            &a),
            "");
  EXPECT_EQ(a.spec.bytes_per_s, 12500000);
  EXPECT_EQ(a.spec.delay_ns, 20 * kMs);
}

TEST(LinkArgsParse, EachBadArgumentIsOneLineNamingIt) {
  const std::vector<std::string> base = {"--netns-a", "A", "--netns-b", "B", "--tap", "t", "--pidfile", "p"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = base;
    v.insert(v.end(), extra.begin(), extra.end());
    LinkArgs a;
    a.tap = "untouched";
    std::string err = parse_link_args(v, &a);
    EXPECT_EQ(a.tap, "untouched") << "a refused command line changed the output";
    return err;
  };
  EXPECT_EQ(with({"--delay-ms", "soon"}), "--delay-ms 'soon' is not 0 to 10000 milliseconds");
  EXPECT_EQ(with({"--delay-ms", "10001"}), "--delay-ms '10001' is not 0 to 10000 milliseconds");
  EXPECT_EQ(with({"--delay-ms", "1."}), "--delay-ms '1.' is not 0 to 10000 milliseconds");
  EXPECT_EQ(with({"--delay-ms", "-1"}), "--delay-ms '-1' is not 0 to 10000 milliseconds");
  EXPECT_EQ(with({"--bandwidth", "0"}),
            "--bandwidth '0' is not bytes per second (e.g. 12500000 or 100M, at most 1000G)");
  EXPECT_EQ(with({"--bandwidth", "10T"}),
            "--bandwidth '10T' is not bytes per second (e.g. 12500000 or 100M, at most 1000G)");
  EXPECT_EQ(with({"--bandwidth", "1001G"}),
            "--bandwidth '1001G' is not bytes per second (e.g. 12500000 or 100M, at most 1000G)");
  EXPECT_EQ(with({"--queue-bytes", "1000"}), "--queue-bytes '1000' is not 65536 to 1073741824 bytes");
  EXPECT_EQ(with({"--queue-bytes", "70000.5"}), "--queue-bytes '70000.5' is not 65536 to 1073741824 bytes");
  EXPECT_EQ(with({"--tap", "a/b"}), "--tap 'a/b' is not an interface name (1-15 characters, no '/', ':' or space)");
  EXPECT_EQ(with({"--tap", "sixteen-chars-xx"}),
            "--tap 'sixteen-chars-xx' is not an interface name (1-15 characters, no '/', ':' or space)");
  EXPECT_EQ(with({"--speed", "1"}), "unknown option '--speed'");
  EXPECT_EQ(with({"--delay-ms"}), "--delay-ms needs a value");
  EXPECT_EQ(with({"--netns-b", "A"}), "--netns-a and --netns-b are the same namespace 'A'");
  LinkArgs a;
  EXPECT_EQ(parse_link_args({"--netns-a", "A", "--tap", "t"}, &a),
            "--netns-a, --netns-b, --tap and --pidfile are required");
  EXPECT_EQ(parse_link_args({"--netns-a", "", "--netns-b", "B"}, &a), "--netns-a needs a file");
}

}  // namespace
