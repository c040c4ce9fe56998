// Tests for --blacklist-cooldown-range (launcher/blacklist_cooldown.h) and the elastic host choice
// that uses it (launcher/elastic_hosts.h), on a fake clock with fixed draws: Horovod's backoff
// MIN * 2^n + U * MIN kept within [MIN, MAX], a host back once its cooldown is over and discovery
// lists it, with one line, its failures forgotten, and twice as long out the next time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launcher/blacklist_cooldown.h"
#include "launcher/elastic_hosts.h"

namespace {

using Lines = std::vector<std::string>;

// The cooldowns' clock and draws, set by the test.
struct FakeCooldown {
  double now = 100, u = 0.5;
  CooldownSource source() {
    return {[this] { return now; }, [this] { return u; }};
  }
};

std::string hosts_text(const std::vector<HostSlots>& hosts) {
  std::string s;
  for (const HostSlots& h : hosts) s += (s.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return s;
}

TEST(BlacklistCooldown, HorovodsBackoffKeptWithinTheRange) {
  const CooldownRange r{10, 100};
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 1, 0.0), 20);
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 1, 0.5), 25);
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 2, 0.5), 45);
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 3, 0.25), 82.5);
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 4, 0.0), 100) << "capped at MAX";
  EXPECT_DOUBLE_EQ(cooldown_seconds(r, 100000, 0.9), 100) << "no overflow";
  EXPECT_DOUBLE_EQ(cooldown_seconds({5, 5}, 1, 0.9), 5);
  EXPECT_DOUBLE_EQ(cooldown_seconds({60, 3600}, 0, 0.0), 60) << "never below MIN";
  EXPECT_EQ(cooldown_flag_text(r), "--blacklist-cooldown-range 10 100");
  EXPECT_EQ(cooldown_seconds_text(82.5), "82.5");
  EXPECT_FALSE(CooldownRange().given());
}

TEST(BlacklistCooldown, AHostComesBackAfterItsCooldownThenStaysOutTwiceAsLong) {
  FakeCooldown clock;
  ElasticHosts e({1, 0, 2}, {10, 100}, clock.source());
  e.update({{"a", 1}, {"b", 1}});
  EXPECT_EQ(e.record_lost("b", "sent no heartbeat for 10 s"),
            "launch: host b blacklisted (sent no heartbeat for 10 s); it gets no ranks for 25.0 s (blacklisting 1, "
            "--blacklist-cooldown-range 10 100)");
  EXPECT_TRUE(e.cooling());
  EXPECT_EQ(e.record_lost("b", "again"), "") << "one notice; a blacklisted host's cooldown is not restarted";
  Lines back;
  clock.now += 24;
  EXPECT_FALSE(e.update({{"a", 1}, {"b", 1}}, &back));
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:1");
  clock.now += 1;
  EXPECT_TRUE(e.update({{"a", 1}, {"b", 1}}, &back));
  EXPECT_EQ(back, Lines{"launch: host b is usable again after its 25.0 s blacklist cooldown"});
  EXPECT_FALSE(e.blacklisted("b"));
  EXPECT_FALSE(e.cooling());
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:1,b:1") << "b keeps its place in the order";
  // Its failures were forgotten: one does not blacklist it again; two do, for twice as long.
  EXPECT_EQ(e.record_failure("b", "x"), "");
  EXPECT_EQ(e.record_failure("b", "y"),
            "launch: host b blacklisted (its ranks failed 2 times, last: y); it gets no ranks for 45.0 s "
            "(blacklisting 2, --blacklist-cooldown-range 10 100)");
  back.clear();
  clock.now += 44;
  e.update({{"a", 1}, {"b", 1}}, &back);
  EXPECT_TRUE(back.empty());
  clock.now += 1;
  e.update({{"a", 1}, {"b", 1}}, &back);
  EXPECT_EQ(back, Lines{"launch: host b is usable again after its 45.0 s blacklist cooldown"});
}

TEST(BlacklistCooldown, ACooledHostComesBackOnlyWhenDiscoveryListsIt) {
  FakeCooldown clock;
  clock.u = 0;
  ElasticHosts e({1, 0, 1}, {1, 1}, clock.source());
  e.update({{"a", 1}, {"b", 1}});
  EXPECT_EQ(e.record_failure("b", "exit 1"),
            "launch: host b blacklisted (its ranks failed 1 times, last: exit 1); it gets no ranks for 1.0 s "
            "(blacklisting 1, --blacklist-cooldown-range 1 1)");
  clock.now += 5;
  Lines back;
  e.update({{"a", 1}}, &back);
  EXPECT_TRUE(back.empty());
  EXPECT_TRUE(e.blacklisted("b"));
  EXPECT_TRUE(e.cooling()) << "still to come back";
  EXPECT_TRUE(e.update({{"a", 1}, {"b", 2}}, &back));
  EXPECT_EQ(back.size(), 1u);
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:1,b:2");
}

TEST(BlacklistCooldown, WithoutTheRangeABlacklistLastsAndNothingCools) {
  FakeCooldown clock;
  ElasticHosts e({1, 0, 2}, {}, clock.source());
  e.update({{"a", 1}, {"b", 1}});
  EXPECT_EQ(e.record_lost("b", "gone"), "launch: host b blacklisted (gone); it gets no ranks for the rest of the job");
  EXPECT_FALSE(e.cooling());
  clock.now += 1e6;
  Lines back;
  e.update({{"a", 1}, {"b", 1}}, &back);
  EXPECT_TRUE(back.empty());
  EXPECT_EQ(hosts_text(e.next_hosts()), "a:1");
}

}  // namespace
