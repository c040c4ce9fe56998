// test_what_if_spec: the pure parts of issue 24's honest time and what-if switches: the
// --straggler / --link-delay / --link-bandwidth parsers (src/what_if_spec.h), the schedstat
// parser (comm/thread_cpu_clock.h), the one split of an exchange into wait, descheduled and transfer
// (src/comm_split.h), the emulated link's hold (comm/emulated_link.h) and the trainer's
// oversubscription line (src/oversubscription.h).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "comm/emulated_link.h"
#include "comm/thread_cpu_clock.h"
#include "src/comm_split.h"
#include "src/oversubscription.h"
#include "src/what_if_spec.h"

namespace {

std::string refusal(double (*parse)(const std::string&), const std::string& text) {
  try {
    parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(WhatIfSpec, LinkRatesInEveryUnit) {
  EXPECT_DOUBLE_EQ(parse_link_rate("100Mbit"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("100Mbit/s"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("100Mbitps"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("1Gbit"), 125e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("1.5Gbit"), 187.5e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("800kbit"), 1e5);
  EXPECT_DOUBLE_EQ(parse_link_rate("800Kbit"), 1e5);
  EXPECT_DOUBLE_EQ(parse_link_rate("8bit"), 1);
  EXPECT_DOUBLE_EQ(parse_link_rate("10MB/s"), 1e7);
  EXPECT_DOUBLE_EQ(parse_link_rate("10kB/s"), 1e4);
  EXPECT_DOUBLE_EQ(parse_link_rate("2GB/s"), 2e9);
  EXPECT_DOUBLE_EQ(parse_link_rate("1000B/s"), 1000);
  for (const char* bad : {"", "Mbit", "1e3Mbit", "-1Mbit", "1..2Mbit", "1 Mbit", "10mbit", "10MB", "7bit", "2000GB/s",
                          "1Mbit/s/s", "0.Mbit ", "inf", "nanMbit"})
    EXPECT_NE(refusal(parse_link_rate, bad), "") << bad;
  EXPECT_EQ(refusal(parse_link_rate, "7bit"), "'7bit' is not between 1 B/s and 1000 GB/s");
}

TEST(WhatIfSpec, LinkDelayAndStraggler) {
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("0"), 0);
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("2.25"), 2.25);
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("10000"), 10000);
  for (const char* bad : {"", "10001", "1e2", "-0", "2ms", " 2", ".", "0x10"})
    EXPECT_NE(refusal(parse_link_delay_ms, bad), "") << bad;
  StragglerSpec s = parse_straggler("3:0.5");
  EXPECT_EQ(s.rank, 3);
  EXPECT_DOUBLE_EQ(s.sleep_ms, 0.5);
  EXPECT_TRUE(s.active());
  s = parse_straggler("0:x1000");
  EXPECT_EQ(s.rank, 0);
  EXPECT_DOUBLE_EQ(s.factor, 1000);
  for (const char* bad :
       {"", ":", "1:", ":5", "1.5:5", "65536:1", "a:1", "1:x", "1:x0.5", "1:x1001", "1:60001", "1:5:6"})
    EXPECT_THROW(parse_straggler(bad), std::invalid_argument) << bad;
}

TEST(CpuClock, SchedstatRunDelay) {
  const std::string line = "132959 1398410 2\n";
  EXPECT_EQ(parse_schedstat_run_delay(line.data(), line.size()), 1398410);
  for (const std::string bad : {"", "1 2", "1 2 3 4", "1 x 3", "1 -2 3", "99999999999999999999 1 1"})
    EXPECT_EQ(parse_schedstat_run_delay(bad.data(), bad.size()), -1) << bad;
  // This thread's clocks move forward, and its CPU time and run_delay never exceed the wall time.
  const auto wall0 = std::chrono::steady_clock::now();
  const CpuTimes a = thread_cpu_times();
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + i;
  const CpuTimes b = thread_cpu_times();
  const int64_t wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall0).count();
  EXPECT_GT(b.on_cpu_ns, a.on_cpu_ns);
  EXPECT_GE(b.run_delay_ns, a.run_delay_ns);
  EXPECT_LE((b.on_cpu_ns - a.on_cpu_ns) + (b.run_delay_ns - a.run_delay_ns), wall);
}

// The one definition: wait to the last arrival, then the longest stall of any rank after it,
// then the rest.
TEST(CommSplit, PartsDoNotOverlapAndAddUpToTheWallTime) {
  // Arrived at 1 ms, the last rank at 4 ms, left at 5 ms; 0.4 ms runnable without a CPU.
  const CommSample first{1000000, 5000000, 250000, 400000};
  EXPECT_EQ(stall_until_ns(first, 4000000, 5000000), 100000);  // 0.4 ms x (1 ms after the last arrival / 4 ms)
  EXPECT_EQ(stall_until_ns(first, 4000000, 4500000), 50000);   // half of that before 4.5 ms
  EXPECT_EQ(stall_until_ns(first, 4000000, 3000000), 0);       // nothing before the last arrival
  CommSplit c = split_comm(first, 4000000, 100000);
  EXPECT_EQ(c.wall_ns, 4000000);
  EXPECT_EQ(c.wait_ns, 3000000);
  EXPECT_EQ(c.descheduled_ns, 100000);
  EXPECT_EQ(c.transfer_ns, 900000);
  EXPECT_EQ(c.on_cpu_ns, 250000);
  EXPECT_EQ(c.run_delay_ns, 400000);
  // The last rank to arrive waits 0: its run_delay is descheduled, not moving bytes; and the
  // first rank, asleep on its socket meanwhile, was held up by it as long.
  const CommSample last{4000000, 5000000, 100000, 600000};
  std::vector<CommSplit> both = split_exchange({first, last});
  EXPECT_EQ(both[1].wait_ns, 0);
  EXPECT_EQ(both[1].descheduled_ns, 600000);
  EXPECT_EQ(both[1].transfer_ns, 400000);
  EXPECT_EQ(both[0].wait_ns, 3000000);
  EXPECT_EQ(both[0].descheduled_ns, 600000);
  EXPECT_EQ(both[0].transfer_ns, 400000);
  // A rank that left at 4.5 ms counts only the stall of the others up to then.
  both = split_exchange({CommSample{1000000, 4500000, 0, 0}, CommSample{4000000, 6000000, 0, 1000000}});
  EXPECT_EQ(both[0].descheduled_ns, 250000);  // 1 ms x 0.5 ms / 2 ms
  EXPECT_EQ(both[0].transfer_ns, 250000);
  EXPECT_EQ(both[1].descheduled_ns, 1000000);
  // Clamped: a run_delay read beyond the wall time, a last arrival after this rank left.
  c = split_comm(CommSample{0, 1000, 5000, 9000}, 3000, 9000);
  EXPECT_EQ(c.wait_ns, 1000);
  EXPECT_EQ(c.descheduled_ns + c.transfer_ns, 0);
  EXPECT_EQ(c.on_cpu_ns, 1000);
  for (int64_t latest : {-5, 0, 7, 500, 999, 2000})
    for (int64_t stall : {-3, 0, 1, 300, 1000, 4000}) {
      c = split_comm(CommSample{0, 1000, 0, 0}, latest, stall);
      EXPECT_EQ(c.wait_ns + c.descheduled_ns + c.transfer_ns, 1000) << latest << " " << stall;
      EXPECT_GE(c.wait_ns, 0);
      EXPECT_GE(c.descheduled_ns, 0);
      EXPECT_GE(c.transfer_ns, 0);
    }
}

TEST(EmulatedLink, HoldIsDelayPlusBytesOverRate) {
  const LinkEmulation link{0.002, 12.5e6};
  EXPECT_TRUE(link.active());
  EXPECT_DOUBLE_EQ(link.hold_s(21840), 0.002 + 21840 / 12.5e6);
  EXPECT_DOUBLE_EQ((LinkEmulation{0, 1e6}.hold_s(1000)), 0.001);
  EXPECT_FALSE(LinkEmulation{}.active());
}

TEST(Oversubscription, OneLineFromLocalRankZeroOnly) {
  EXPECT_EQ(trainer_oversubscribed_line(4, 0, 2, ""),
            "4 ranks on this host's 2 CPUs: times include waiting for a CPU (descheduled_s in --metrics, marked in "
            "./report)");
  EXPECT_EQ(trainer_oversubscribed_line(2, 0, 1, "2 ranks on this host's 1 CPU: Open MPI yields when idle (x)"),
            "2 ranks on this host's 1 CPU: Open MPI yields when idle (x); times include waiting for a CPU "
            "(descheduled_s in --metrics, marked in ./report)");
  EXPECT_EQ(trainer_oversubscribed_line(4, 1, 2, ""), "");
  EXPECT_EQ(trainer_oversubscribed_line(2, 0, 2, ""), "");
}

}  // namespace
