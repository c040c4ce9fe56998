// test_torchrun: ./train under PyTorch's torchrun (issue 12).
//   TorchrunEnv    RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK / MASTER_ADDR /
//                  MASTER_PORT read strictly (comm/torchrun_env.cc), and their one-line errors
//   TorchrunTrain  ./train with torchrun's variables and world size > 1 meets the other ranks in
//                  torchrun's c10d TCPStore, or stops with one line naming the variables and the
//                  store; never a duplicate rank 0. Under Debian's real torchrun: one 2-rank job
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm/comm_internal.h"
#include "comm/communicator.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"
#include "tests/rank_env_checks.h"

using namespace testutil;

namespace {

using rank_env_checks::EnvMap;
using rank_env_checks::discover;
using rank_env_checks::discover_error;

// What torchrun's agent sets for worker 3 of 2 nodes x 2 workers.
EnvMap torchrun_env() {
  return {{"RANK", "3"},       {"WORLD_SIZE", "4"},          {"LOCAL_RANK", "1"},      {"LOCAL_WORLD_SIZE", "2"},
          {"GROUP_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "none"}};
}

EnvMap with(EnvMap env, const std::string& k, const char* v) {
  if (v)
    env[k] = v;
  else
    env.erase(k);
  return env;
}

}  // namespace

TEST(TorchrunEnv, Variables) {
  RankInfo r = discover(torchrun_env());
  EXPECT_EQ(r.source, "torchrun");
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_size, 2);
  EXPECT_EQ(r.cross_rank, 1);
  EXPECT_EQ(r.cross_size, 2);
  EXPECT_EQ(r.c10d_store_addr, "127.0.0.1:29500");
  EXPECT_EQ(r.store_addr, "");
  EXPECT_EQ(r.job_id, "torchrun-none");
}

TEST(TorchrunEnv, OurLauncherAndOpenMpiComeFirst) {
  EnvMap env = torchrun_env();
  env["BARESGD_RANK"] = "0";
  env["BARESGD_SIZE"] = "1";
  EXPECT_EQ(discover(env).source, "launch");
  env = torchrun_env();
  env["OMPI_COMM_WORLD_RANK"] = "1";
  env["OMPI_COMM_WORLD_SIZE"] = "2";
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  EXPECT_EQ(discover(env).source, "ompi");
}

TEST(TorchrunEnv, WorldSizeOneNeedsNoMaster) {
  RankInfo r = discover({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}});
  EXPECT_EQ(r.source, "torchrun");
  EXPECT_EQ(r.size, 1);
  EXPECT_EQ(r.c10d_store_addr, "");
}

TEST(TorchrunEnv, ErrorsNameVariablesAndValues) {
  const EnvMap base = torchrun_env();
  struct Case {
    EnvMap env;
    std::string want;
  } cases[] = {
      {with(base, "RANK", "4"), "RANK=4 must be < WORLD_SIZE=4"},
      {with(base, "LOCAL_RANK", "2"), "LOCAL_RANK=2 must be < LOCAL_WORLD_SIZE=2"},
      {with(base, "LOCAL_WORLD_SIZE", "8"), "LOCAL_WORLD_SIZE=8 is larger than WORLD_SIZE=4"},
      {with(base, "WORLD_SIZE", "two"), "WORLD_SIZE='two' is not a non-negative integer"},
      {with(base, "RANK", "-1"), "RANK='-1' is not a non-negative integer"},
      {with(base, "RANK", " 3"), "RANK=' 3' is not a non-negative integer"},
      {with(base, "WORLD_SIZE", "0"), "WORLD_SIZE=0 must be >= 1"},
      {with(base, "WORLD_SIZE", nullptr), "RANK is set but WORLD_SIZE is not"},
      {with(base, "LOCAL_WORLD_SIZE", nullptr), "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not"},
      {with(base, "GROUP_RANK", "0"), "GROUP_RANK=0 does not match RANK=3 / LOCAL_WORLD_SIZE=2 (node 1)"},
      {with(base, "MASTER_PORT", nullptr), "MASTER_PORT is not set (MASTER_ADDR='127.0.0.1', WORLD_SIZE=4)"},
      {with(base, "MASTER_PORT", "70000"), "MASTER_PORT=70000 is not a port (1..65535)"},
      {with(base, "MASTER_PORT", "29500\n"), "MASTER_PORT='29500\\x0a' is not a non-negative integer"},
      {with(base, "MASTER_ADDR", nullptr), "MASTER_ADDR is not set (WORLD_SIZE=4, RANK=3)"},
      {with(base, "MASTER_ADDR", "a b"), "MASTER_ADDR='a b' is not a host name"},
      {with(base, "RANK", "99999999999"), "RANK='99999999999' is out of range for an int"},
  };
  for (const Case& c : cases) {
    std::string err = discover_error(c.env);
    EXPECT_EQ(err, "torchrun environment: " + c.want);
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  EXPECT_NE(discover_error(with(base, "BARESGD_COMM", "single")).find("BARESGD_COMM=single"), std::string::npos);
}

namespace {

// ./train with torchrun's variables for rank `rank` of 2, plus extra arguments.
RunResult train_as_torchrun_rank(int rank, const std::string& extra_env, const std::string& args) {
  std::string env =
      "env -u BARESGD_RANK -u BARESGD_SIZE -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID RANK=" + std::to_string(rank) +
      " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(rank) +
      " LOCAL_WORLD_SIZE=2 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 " + extra_env + " ";
  return run(env + train_bin() + " --max-steps 1 --epochs 1 " + args, 60);
}

bool is_one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

}  // namespace

// Before issue 12, each of these trained alone as rank 0 of 1 and wrote the checkpoint. Gloo (the
// default) now meets the other ranks in torchrun's store, here a closed port: named, one line.
TEST(TorchrunTrain, WorldSizeTwoNeverTrainsAsDuplicateRankZero) {
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  const std::string dir = make_temp_dir("torchrun-refuse");
  for (const char* comm : {"", "BARESGD_COMM=gloo", "BARESGD_COMM=single", "BARESGD_COMM=mpi"}) {
    RunResult r = train_as_torchrun_rank(0, comm, "--start-timeout 2 --checkpoint-dir " + dir + "/ckpt");
    EXPECT_NE(r.status, 0) << comm << ": " << r.err;
    EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos) << comm << ": " << r.out;
    EXPECT_TRUE(is_one_line(r.err)) << comm << ": " << r.err;
    if (std::string(comm) == "BARESGD_COMM=single") {  // refused while reading the environment
      EXPECT_NE(r.err.find("BARESGD_COMM=single but the torchrun environment says the world has 2 ranks"),
                std::string::npos)
          << r.err;
      continue;
    }
    EXPECT_NE(r.err.find("WORLD_SIZE=2"), std::string::npos) << comm << ": " << r.err;
    EXPECT_NE(r.err.find("RANK=0"), std::string::npos) << comm << ": " << r.err;
    if (std::string(comm) != "BARESGD_COMM=mpi") {
      EXPECT_NE(r.err.find("MASTER_ADDR:MASTER_PORT=127.0.0.1:1): torchrun's c10d TCPStore at 127.0.0.1:1 not "
                           "reachable within 2000 ms"),
                std::string::npos)
          << comm << ": " << r.err;
    }
  }
  EXPECT_EQ(run("ls " + dir + "/ckpt 2>/dev/null | grep -c ckpt").out, "0\n");
  run("rm -rf " + dir);
}

TEST(TorchrunTrain, InconsistentVariablesStopTrain) {
  RunResult r = run("env -u BARESGD_RANK -u BARESGD_SIZE RANK=2 WORLD_SIZE=2 " + train_bin() + " --max-steps 1", 60);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(is_one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("RANK=2 must be < WORLD_SIZE=2"), std::string::npos) << r.err;
}

// Debian's real torchrun (python3-torch, a test-only dependency) starting 2 workers of ./train:
// one 2-rank job through torchrun's c10d TCPStore, ending where ./launch -np 2 --gloo ends.
TEST(TorchrunTrain, RealTorchrunTwoWorkersTrainAsOneJob) {
  if (run("command -v torchrun").status != 0) BARESGD_SKIP("torchrun not installed (python3-torch)");
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  const std::string dir = make_temp_dir("torchrun-real");
  RunResult port =
      run("python3 -c 'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));print(s.getsockname()[1])'");
  ASSERT_EQ(port.status, 0) << port.err;
  port.out.pop_back();
  const std::string flags = " --epochs 1 --max-steps 40 --checkpoint-dir " + dir + "/ckpt --dump-params ";
  // This Python's torchrun crashes in its log handling unless given -r 1 -t 1 --log_dir.
  RunResult r = run("env -u BARESGD_RANK -u BARESGD_SIZE torchrun --no_python --nproc_per_node 2 -r 1 -t 1 --log_dir " +
                        dir + "/logs --master_addr 127.0.0.1 --master_port " + port.out + " " + train_bin() + flags +
                        dir + "/torchrun-%r.bin",
                    180);
  EXPECT_FALSE(r.timed_out);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("world_size=2 backend=gloo"), std::string::npos) << r.err;
  const std::string rank0 = read_file(dir + "/torchrun-0.bin"), rank1 = read_file(dir + "/torchrun-1.bin");
  ASSERT_EQ(rank0.size(), 21840u * 4);
  EXPECT_TRUE(rank0 == rank1) << "the two torchrun workers ended with different parameters";
  RunResult l = run(launch_bin() + " -np 2 --gloo " + train_bin() + flags + dir + "/launch-%r.bin", 180);
  ASSERT_EQ(l.status, 0) << l.out << l.err;
  EXPECT_TRUE(rank0 == read_file(dir + "/launch-0.bin")) << "torchrun's job and ./launch's differ";
  run("rm -rf " + dir);
}
