// test_store_munge: the pure admission rules of the MUNGE store handshake (foreign uid, other job
// step, expired / replayed / unreachable-munged statuses) and the job step's port sequence.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "comm/store_munge_check.h"

namespace {

DecodedCredential good() {
  DecodedCredential c;
  c.status = MungeStatus::kOk;
  c.uid = 1000;
  c.payload = munge_step_payload("42", "0");
  return c;
}

std::string check(const DecodedCredential& c) {
  return check_munge_credential(c, 1000, munge_step_payload("42", "0"), "client 127.0.0.1:5000");
}

TEST(StoreMungeCheck, AdmitsOwnUidForThisStep) { EXPECT_EQ(check(good()), ""); }

TEST(StoreMungeCheck, RefusesEachBadCredentialWithOneLineNamingIt) {
  DecodedCredential foreign = good();
  foreign.uid = 65534;
  EXPECT_EQ(check(foreign), "MUNGE credential from client 127.0.0.1:5000 belongs to uid 65534, "
                            "not this job's uid 1000");
  DecodedCredential other_step = good();
  other_step.payload = munge_step_payload("42", "1");
  EXPECT_NE(check(other_step).find("not this job step (baresgd-store job=42 step=0)"),
            std::string::npos);
  DecodedCredential expired = good();
  expired.status = MungeStatus::kExpired;
  expired.status_text = "Expired credential";
  EXPECT_NE(check(expired).find("is expired"), std::string::npos);
  DecodedCredential replayed = good();
  replayed.status = MungeStatus::kReplayed;
  replayed.status_text = "Replayed\ncredential";
  std::string msg = check(replayed);
  EXPECT_NE(msg.find("is replayed"), std::string::npos);
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(StoreMungePorts, DeterministicInRangeAndDistinct) {
  std::vector<int> a = store_munge_ports("42", "0");
  EXPECT_EQ(a, store_munge_ports("42", "0"));
  EXPECT_NE(a, store_munge_ports("42", "1"));
  EXPECT_EQ(a.size(), static_cast<size_t>(kStoreMungePortTries));
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), a.size());
  for (int p : a) {
    EXPECT_GE(p, kStoreMungePortBase);
    EXPECT_LT(p, kStoreMungePortBase + kStoreMungePortSpan);
  }
  EXPECT_THROW(store_munge_ports("4x2", "0"), std::invalid_argument);
  EXPECT_THROW(store_munge_ports("42", ""), std::invalid_argument);
}

}  // namespace
