// test_store_munge: the pure admission rules of the MUNGE store handshake (foreign uid, other job
// step, expired / replayed / unreachable-munged statuses), the job step's port sequence, the plan
// of srun's Gloo rendezvous (rank 0's node from SLURM_STEP_NODELIST / SLURM_STEP_TASKS_PER_NODE),
// the Slurm variables rank discovery keeps for it, and the client passing over ports that do not
// answer (no munged needed: the handshake stops before any credential). Against a real munged
// and srun: tests/test_slurm_srun_gloo.cc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <stdexcept>

#include "comm/munge_store_client.h"
#include "comm/slurm_store.h"
#include "comm/slurm_store_plan.h"
#include "comm/store_munge_check.h"
#include "tests/rank_env_checks.h"

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
  EXPECT_EQ(check(foreign),
            "MUNGE credential from client 127.0.0.1:5000 belongs to uid 65534, "
            "not this job's uid 1000");
  DecodedCredential other_step = good();
  other_step.payload = munge_step_payload("42", "1");
  EXPECT_NE(check(other_step).find("not this job step (baresgd-store job=42 step=0)"), std::string::npos);
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

TEST(StoreMungeCheck, PayloadsBindBothNoncesAndTheDirection) {
  const std::string step = munge_step_payload("42", "0");
  EXPECT_EQ(munge_client_payload(step, "aa", "bb"), step + " client-hello server-nonce=aa client-nonce=bb");
  EXPECT_EQ(munge_server_payload(step, "bb"), step + " server-reply client-nonce=bb");
  EXPECT_NE(munge_client_payload(step, "aa", "bb"), munge_client_payload(step, "ab", "bb"));
}

TEST(SlurmStorePlan, RankZeroIsOnTheFirstNodeOfTheBlocks) {
  SlurmStorePlan p = plan_slurm_store("42", "3", "node[07-09]", "2(x2),1", 5);
  EXPECT_EQ(p.rank0_node, "node07");
  EXPECT_EQ(p.ports, store_munge_ports("42", "3"));
  EXPECT_EQ(p.step_payload, "baresgd-store job=42 step=3");
  const std::vector<std::string> nodes = {"a", "b", "c"};
  EXPECT_EQ(node_of_task(nodes, {2, 2, 1}, 0), "a");
  EXPECT_EQ(node_of_task(nodes, {2, 2, 1}, 3), "b");
  EXPECT_EQ(node_of_task(nodes, {2, 2, 1}, 4), "c");
  EXPECT_EQ(node_of_task(nodes, {2, 2, 1}, 5), "");
}

TEST(SlurmStorePlan, BadListsAreOneLineNamingTheVariable) {
  auto error = [](const std::string& nodes, const std::string& tpn, int size, const std::string& job = "42") {
    try {
      plan_slurm_store(job, "0", nodes, tpn, size);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string counts = error("n[1-2]", "2", 2);
  EXPECT_NE(counts.find("SLURM_STEP_TASKS_PER_NODE='2' over SLURM_STEP_NODELIST='n[1-2]' is 2 tasks on 1 of 2 nodes, "
                        "not this step's 2 tasks"),
            std::string::npos)
      << counts;
  EXPECT_NE(error("n[1-2]", "2(x2)", 3).find("not this step's 3 tasks"), std::string::npos);
  EXPECT_NE(error("n[2-1]", "1(x2)", 2).find("SLURM_STEP_NODELIST='n[2-1]'"), std::string::npos);
  EXPECT_NE(error("", "1", 1).find("SLURM_STEP_NODELIST"), std::string::npos);
  EXPECT_NE(error("n1", "1", 1, "x").find("SLURM_JOB_ID=x is not a Slurm id"), std::string::npos);
  for (const std::string& e : {counts, error("n[1\n]", "1", 1)}) EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(SlurmStoreEnv, SrunTasksKeepTheirStepForTheStore) {
  rank_env_checks::EnvMap env = {{"SLURM_PROCID", "1"},
                                 {"SLURM_NTASKS", "2"},
                                 {"SLURM_LOCALID", "1"},
                                 {"SLURM_JOB_ID", "77"},
                                 {"SLURM_STEP_ID", "4"},
                                 {"SLURM_STEP_NODELIST", "localhost"},
                                 {"SLURM_STEP_TASKS_PER_NODE", "2"},
                                 {"BARESGD_MUNGE_SOCKET", "/x/munge.socket.2"}};
  RankInfo r = rank_env_checks::discover(env);
  EXPECT_EQ(r.slurm_job, "77");
  EXPECT_EQ(r.slurm_step, "4");
  EXPECT_EQ(r.slurm_nodelist, "localhost");
  EXPECT_EQ(r.slurm_tasks_per_node, "2");
  EXPECT_EQ(r.munge_socket, "/x/munge.socket.2");
  EXPECT_TRUE(uses_slurm_store(r));
  env["BARESGD_STORE_ADDR"] = "127.0.0.1:5";  // the launcher's store wins
  EXPECT_FALSE(uses_slurm_store(rank_env_checks::discover(env)));
  RankInfo batch = rank_env_checks::discover({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "9"}});
  EXPECT_FALSE(uses_slurm_store(batch));  // an sbatch script's batch step: a single process
}

TEST(MungeStoreClient, OutcomesJoinConsecutivePorts) {
  EXPECT_EQ(describe_port_outcomes("h", {5, 6, 7, 9}, {"a", "b", "b", "b"}), "h:5 (a), h:6-7 (b), h:9 (b)");
  EXPECT_EQ(describe_port_outcomes("h", {5}, {"a"}), "h:5 (a)");
}

// A listener that accepts and never speaks, and a closed port: both named, within the timeout.
TEST(MungeStoreClient, SilentListenerAndClosedPortAreNamedWithinTheTimeout) {
  int silent = ::socket(AF_INET, SOCK_STREAM, 0), closed = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(silent, 4), 0);
  ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const int silent_port = ntohs(sa.sin_port);
  sa.sin_port = 0;
  ASSERT_EQ(::bind(closed, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);  // bound, not listening
  ASSERT_EQ(::getsockname(closed, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const int closed_port = ntohs(sa.sin_port);
  MungeStoreTarget t{"node0", "127.0.0.1", {silent_port, closed_port}, munge_step_payload("1", "0"), ""};
  std::string where, msg = "(no error)";
  try {
    ::close(munge_store_connect(t, std::chrono::milliseconds(1500), &where));
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("rank 0's rendezvous store on node node0 (127.0.0.1) did not complete the MUNGE handshake "
                     "within 1500 ms"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node0:" + std::to_string(silent_port) + " (connected, but no greeting)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("node0:" + std::to_string(closed_port) + " (Connection refused)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  ::close(silent);
  ::close(closed);
}

}  // namespace
