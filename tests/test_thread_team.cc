// Tests for src/thread_team: every part runs exactly once per job, whoever claims it, also when
// jobs with different part counts follow each other at once, and a part's exception reaches the
// caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "src/thread_team.h"

TEST(ThreadTeam, EveryPartRunsOnceInEveryJob) {
  ThreadTeam team(3);
  EXPECT_EQ(team.threads(), 3);
  for (int job = 0; job < 2000; ++job) {
    const int parts = 1 + job % 7;  // fewer, as many and more parts than threads, back to back
    std::vector<std::atomic<int>> runs(parts);
    team.run(parts, [&](int p) { runs[p].fetch_add(1); });
    for (int p = 0; p < parts; ++p) ASSERT_EQ(runs[p].load(), 1) << "job " << job << " part " << p;
  }
}

TEST(ThreadTeam, PartsRunOnSeveralThreads) {
  ThreadTeam team(2);
  std::atomic<int> both_in{0};
  std::atomic<bool> met{false};
  // Each part waits (bounded) for the other to be running too: only two threads can meet.
  team.run(2, [&](int) {
    both_in.fetch_add(1);
    for (int i = 0; i < 200000000 && both_in.load() < 2; ++i) std::this_thread::yield();
    if (both_in.load() == 2) met = true;
  });
  EXPECT_TRUE(met.load());
}

TEST(ThreadTeam, OneThreadRunsEveryPartOnTheCaller) {
  ThreadTeam team(1);
  const auto caller = std::this_thread::get_id();
  int ran = 0;
  team.run(5, [&](int) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  EXPECT_EQ(ran, 5);
}

TEST(ThreadTeam, APartsExceptionIsRethrownAfterTheOthersFinish) {
  ThreadTeam team(2);
  for (int throwing = 0; throwing < 4; ++throwing) {
    std::atomic<int> finished{0};
    try {
      team.run(4, [&](int p) {
        if (p == throwing) throw std::runtime_error("part " + std::to_string(p));
        finished.fetch_add(1);
      });
      ADD_FAILURE() << "no exception from part " << throwing;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "part " + std::to_string(throwing));
    }
    EXPECT_EQ(finished.load(), 3);
  }
  int ran = 0;  // the team still works
  team.run(2, [&](int) { ++ran; });
  EXPECT_EQ(ran, 2);
}
