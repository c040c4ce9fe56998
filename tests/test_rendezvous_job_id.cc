// test_rendezvous_job_id: the job id under --rendezvous-dir (RendezvousJobId). Ranks that no
// starter named must name their job (--job-id or BARESGD_JOB_ID): the fixed default "baresgd"
// is refused before any file is read, so a claim file planted (or left by a killed job) under
// that id can neither capture nor stop a job; under Open MPI the id carries a digest of the
// job's random key, shared by its ranks and unknown to anyone else.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "comm/comm_internal.h"
#include "comm/rendezvous_files.h"
#include "src/options.h"
#include "tests/fault_harness.h"
#include "tests/test_util.h"

namespace {

using namespace faultharness;

RankInfo discover(const std::map<std::string, std::string>& env) {
  return discover_rank_info([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::map<std::string, std::string> by_hand(int rank) {
  return {{"BARESGD_RANK", std::to_string(rank)}, {"BARESGD_SIZE", "2"}, {"BARESGD_COMM", "gloo"}};
}

std::map<std::string, std::string> open_mpi(int rank, const std::string& key) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", "2"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
          {"OMPI_MCA_ess_base_jobid", "295501825"},
          {"OMPI_MCA_orte_precondition_transports", key}};
}

TEST(RendezvousJobId, RanksThatNoStarterNamedGetTheDefaultMarkedAsSuch) {
  const RankInfo r = discover(by_hand(0));
  EXPECT_EQ(r.job_id, "baresgd");
  EXPECT_TRUE(r.job_id_default);
  auto named = by_hand(0);
  named["BARESGD_JOB_ID"] = "j42";
  EXPECT_EQ(discover(named).job_id, "j42");
  EXPECT_FALSE(discover(named).job_id_default);
}

TEST(RendezvousJobId, OpenMpiRanksShareAnIdThatCarriesADigestOfTheJobsKey) {
  const std::string key = "d89202df66c1fb9c-0de82c89785e37fa";
  const RankInfo a = discover(open_mpi(0, key)), b = discover(open_mpi(1, key));
  EXPECT_FALSE(a.job_id_default);
  EXPECT_EQ(a.job_id, b.job_id);  // every rank of the job agrees
  EXPECT_TRUE(std::regex_match(a.job_id, std::regex("ompi-295501825-[0-9a-f]{16}"))) << a.job_id;
  EXPECT_EQ(a.job_id.find("d89202df"), std::string::npos) << "the key itself is shown: " << a.job_id;
  // Another job with the same Open MPI job id but another key: another id.
  EXPECT_NE(discover(open_mpi(0, "0000000000000001-0000000000000002")).job_id, a.job_id);
}

TEST(RendezvousJobId, JobIdFlagTakesSafeNamesOnly) {
  Options o = parse_options({"--job-id", "run-7.a_b"});
  EXPECT_EQ(o.job_id, "run-7.a_b");
  for (const char* bad : {"", "a/b", "a b", "../x"}) {
    try {
      parse_options({"--job-id", bad});
      ADD_FAILURE() << "accepted --job-id '" << bad << "'";
    } catch (const TrainUsageError& e) {
      EXPECT_NE(e.message.find("argument --job-id: invalid job id"), std::string::npos) << e.message;
    }
  }
}

// Two ./train ranks started by hand on a shared --rendezvous-dir in which an old claim of rank 0
// under the default id lies (a killed job's, or another's planted file).
class RendezvousJobIdRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testutil::have_mnist()) << "run `make data` first";
    marker_ = unique_marker();
    dir_ = "/tmp/baresgd-" + marker_;
    rdv_ = dir_ + "/rdv";
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(rdv_.c_str(), 0700), 0);
    link_real_mnist(dir_ + "/data");
    // The old claim of rank 0 under the default job id (comm/backend_gloo.cc's key, rendezvous_files' name).
    old_claim_ = rdv_ + "/claim-" + rendezvous_file_name("baresgd/baresgd/claim/0");
    std::ofstream(old_claim_) << "";
  }
  void TearDown() override {
    kill_procs_with(marker_);
    std::system(("rm -rf '" + dir_ + "'").c_str());
    EXPECT_GE(wait_no_procs(marker_, 30), 0) << "processes survived teardown";
  }
  // Rank r's argv: env without a starter's job id, then ./train.
  std::vector<std::string> rank(int r, const std::vector<std::string>& extra_env,
                                const std::vector<std::string>& flags) const {
    std::vector<std::string> a = {"/usr/bin/env",
                                  "-u",
                                  "BARESGD_JOB_ID",
                                  "BARESGD_RANK=" + std::to_string(r),
                                  "BARESGD_SIZE=2",
                                  "BARESGD_LOCAL_RANK=" + std::to_string(r),
                                  "BARESGD_LOCAL_SIZE=2",
                                  "BARESGD_COMM=gloo",
                                  "BARESGD_HOST_ADDR=127.0.0.1"};
    a.insert(a.end(), extra_env.begin(), extra_env.end());
    a.insert(a.end(), {abs_path(testutil::train_bin()), "--rendezvous-dir", rdv_, "--data-dir", dir_ + "/data",
                       "--max-steps", "1", "--start-timeout", "60"});
    a.insert(a.end(), flags.begin(), flags.end());
    return a;
  }
  std::string marker_, dir_, rdv_, old_claim_;
};

TEST_F(RendezvousJobIdRun, WithoutAJobIdRanksAreRefusedBeforeReadingTheDirectory) {
  Proc r0(rank(0, {}, {})), r1(rank(1, {}, {}));
  for (Proc* p : {&r0, &r1}) {
    EXPECT_EQ(p->code(120), 1) << p->err();
    EXPECT_NE(p->err().find("train: error: rank "), std::string::npos) << p->err();
    EXPECT_NE(p->err().find(": --rendezvous-dir needs a job id every rank shares and no one else can guess, and no "
                            "starter gave one: pass --job-id ID on every rank"),
              std::string::npos)
        << p->err();
    EXPECT_EQ(p->err().find("already registered"), std::string::npos) << p->err();
  }
}

TEST_F(RendezvousJobIdRun, TheOldClaimStopsAJobThatStillUsesTheDefaultId) {
  // What the refusal prevents (and proof that the planted claim is live): ranks told to use
  // "baresgd" meet the old claim and fail on it.
  Proc r0(rank(0, {"BARESGD_JOB_ID=baresgd"}, {"--start-timeout", "5"}));
  Proc r1(rank(1, {"BARESGD_JOB_ID=baresgd"}, {"--start-timeout", "5"}));
  EXPECT_NE(r0.code(120), 0);
  EXPECT_NE(r0.err().find("rank 0 of job 'baresgd' is already registered"), std::string::npos) << r0.err();
  r1.code(120);
}

TEST_F(RendezvousJobIdRun, AJobWithItsOwnIdIsNotCapturedByTheOldClaim) {
  const std::string id = "j" + marker_;
  Proc r0(rank(0, {}, {"--job-id", id})), r1(rank(1, {"BARESGD_JOB_ID=" + id}, {}));  // flag or variable
  EXPECT_EQ(r0.code(180), 0) << r0.err();
  EXPECT_EQ(r1.code(180), 0) << r1.err();
  EXPECT_NE(r0.out().find("Train Epoch: 1"), std::string::npos) << r0.out() << r0.err();
  struct stat st;
  EXPECT_EQ(::stat(old_claim_.c_str(), &st), 0) << "the old claim was touched";
}

}  // namespace
