// test_torchrun: ./train under PyTorch's torchrun (issue 12).
//   TorchrunEnv    RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK / MASTER_ADDR /
//                  MASTER_PORT read strictly (comm/torchrun_env.cc), and their one-line errors
//   TorchrunTrain  ./train with torchrun's variables and world size > 1 meets the other ranks in
//                  torchrun's c10d TCPStore, or stops with one line naming the variables and the
//                  store; never a duplicate rank 0. With TORCHELASTIC_USE_AGENT_STORE=False rank 0
//                  serves the store (issue 25). Under Debian's real torchrun, in each of its
//                  rendezvous (static, --standalone, c10d with two torchruns): one job ending
//                  where ./launch's ends
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

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
  return {{"RANK", "3"},
          {"WORLD_SIZE", "4"},
          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"GROUP_RANK", "1"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RUN_ID", "none"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
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
  EXPECT_FALSE(r.c10d_store_on_rank0);
}

// Static rendezvous: the agent serves the store ("True"). --standalone and c10d: rank 0 does
// ("False"), and so it does with no such variable (PyTorch's env://). Nothing else is accepted.
TEST(TorchrunEnv, AgentStoreVariableDecidesWhoServesTheStore) {
  EXPECT_FALSE(discover(torchrun_env()).c10d_store_on_rank0);
  EXPECT_TRUE(discover(with(torchrun_env(), "TORCHELASTIC_USE_AGENT_STORE", "False")).c10d_store_on_rank0);
  EXPECT_TRUE(discover(with(torchrun_env(), "TORCHELASTIC_USE_AGENT_STORE", nullptr)).c10d_store_on_rank0);
  for (const char* bad : {"true", "1", "", "False ", "yes"}) {
    const std::string err = discover_error(with(torchrun_env(), "TORCHELASTIC_USE_AGENT_STORE", bad));
    EXPECT_EQ(err, "torchrun environment: TORCHELASTIC_USE_AGENT_STORE='" + std::string(bad) +
                       "' is neither True nor False (RANK=3)");
  }
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
      " LOCAL_WORLD_SIZE=2 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 TORCHELASTIC_USE_AGENT_STORE=True " +
      extra_env + " ";
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

// ---- Rank 0 serves the store: torchrun without its agent's store (issue 25). ----

namespace {

// A TCP port on 127.0.0.1 that was free when asked.
std::string free_port() {
  RunResult port =
      run("python3 -c 'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));print(s.getsockname()[1])'");
  if (port.status != 0 || port.out.empty()) return "";
  port.out.pop_back();
  return port.out;
}

// torchrun's variables for rank `rank` of 2 on one node whose agent store is off.
std::vector<std::string> rank_env_without_agent_store(int rank, const std::string& port) {
  std::vector<std::string> env;
  for (const std::string& kv : current_environment())
    if (kv.rfind("BARESGD_RANK=", 0) != 0 && kv.rfind("BARESGD_SIZE=", 0) != 0 &&
        kv.rfind("OMPI_COMM_WORLD_", 0) != 0 && kv.rfind("SLURM_", 0) != 0)
      env.push_back(kv);
  for (const std::string& kv :
       {"RANK=" + std::to_string(rank), std::string("WORLD_SIZE=2"), "LOCAL_RANK=" + std::to_string(rank),
        std::string("LOCAL_WORLD_SIZE=2"), std::string("GROUP_RANK=0"), std::string("MASTER_ADDR=127.0.0.1"),
        "MASTER_PORT=" + port, std::string("TORCHELASTIC_USE_AGENT_STORE=False"),
        std::string("TORCHELASTIC_RUN_ID=by-hand")})
    env.push_back(kv);
  return env;
}

// The final parameters of `./launch -np 2 --gloo ./train <flags> --dump-params DIR/launch-%r.bin`.
std::string launch_params(const std::string& dir, const std::string& flags) {
  RunResult l = run(launch_bin() + " -np 2 --gloo " + train_bin() + flags + dir + "/launch-%r.bin", 180);
  EXPECT_EQ(l.status, 0) << l.out << l.err;
  return read_file(dir + "/launch-0.bin");
}

}  // namespace

// Before issue 25 both ranks waited for a store nobody served and stopped after --start-timeout.
TEST(TorchrunTrain, RankZeroServesTheStoreWhenTheAgentDoesNot) {
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  const std::string dir = make_temp_dir("torchrun-rank0-store");
  const std::string port = free_port();
  ASSERT_FALSE(port.empty());
  std::vector<ProcSpec> ranks;
  for (int rank : {1, 0})  // rank 1 first: it must wait for rank 0's store to appear
    ranks.push_back({{train_bin(), "--epochs", "1", "--max-steps", "20", "--start-timeout", "60", "--dump-params",
                      dir + "/rank-%r.bin"},
                     rank_env_without_agent_store(rank, port)});
  RunAll all = run_processes(ranks, 180);
  ASSERT_FALSE(all.timed_out) << all.describe();
  ASSERT_EQ(all.procs[0].status, 0) << all.describe();
  ASSERT_EQ(all.procs[1].status, 0) << all.describe();
  EXPECT_NE(all.procs[1].err.find("world_size=2 backend=gloo"), std::string::npos) << all.describe();
  const std::string rank0 = read_file(dir + "/rank-0.bin");
  ASSERT_EQ(rank0.size(), 21840u * 4);
  EXPECT_TRUE(rank0 == read_file(dir + "/rank-1.bin")) << "the two ranks ended with different parameters";
  run("rm -rf " + dir);
}

// Rank 0 cannot serve on a port another program holds; a rank > 0 whose rank 0 never serves
// names the store it waited for. One line each, naming rank, variables and port.
TEST(TorchrunTrain, RankZeroStoreErrorsAreOneLine) {
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof sa;
  ::getsockname(held, reinterpret_cast<sockaddr*>(&sa), &len);
  const std::string port = std::to_string(ntohs(sa.sin_port));
  RunAll r0 = run_processes(
      {{{train_bin(), "--max-steps", "1", "--start-timeout", "2"}, rank_env_without_agent_store(0, port)}}, 60);
  ::close(held);
  EXPECT_NE(r0.procs[0].status, 0);
  const std::string& err = r0.procs[0].err;
  EXPECT_TRUE(is_one_line(err)) << err;
  EXPECT_NE(err.find("(torchrun RANK=0 WORLD_SIZE=2, MASTER_ADDR:MASTER_PORT=127.0.0.1:" + port +
                     ", TORCHELASTIC_USE_AGENT_STORE=False): cannot serve the c10d TCPStore on 127.0.0.1:" + port +
                     ": port " + port + " is already in use on 127.0.0.1"),
            std::string::npos)
      << err;
  RunAll r1 = run_processes(
      {{{train_bin(), "--max-steps", "1", "--start-timeout", "2"}, rank_env_without_agent_store(1, "1")}}, 60);
  EXPECT_NE(r1.procs[0].status, 0);
  EXPECT_TRUE(is_one_line(r1.procs[0].err)) << r1.procs[0].err;
  EXPECT_NE(r1.procs[0].err.find("the c10d TCPStore rank 0 serves at 127.0.0.1:1 not reachable within 2000 ms"),
            std::string::npos)
      << r1.procs[0].err;
}

namespace {

// Runs the shell script `body` in a new network and UTS namespace whose one interface is
// loopback and whose host name is "localhost". torchrun's c10d rendezvous gives the workers
// MASTER_ADDR = the host's name, and --standalone always takes port 29400: in the namespace both
// stay on its own loopback, whatever this machine's name resolves to and whoever holds 29400 here.
RunResult run_in_private_network(const std::string& dir, const std::string& body, double timeout_s) {
  write_file(dir + "/job.sh", "set -u\nip link set lo up && hostname localhost || exit 97\n" + body);
  return run("unshare --net --uts sh " + dir + "/job.sh", timeout_s);
}

const char* kTorchrunFlags = " -r 1 -t 1 --no_python";  // this Python's torchrun needs -r 1 -t 1 --log_dir

std::string torchrun_train_flags(const std::string& dir) {
  return " --epochs 1 --max-steps 40 --checkpoint-dir " + dir + "/ckpt --dump-params ";
}

}  // namespace

// `torchrun --standalone --nproc_per_node 2`: before issue 25, "c10d TCPStore ... not reachable".
TEST(TorchrunTrain, RealTorchrunStandaloneTrainsAsOneJob) {
  if (run("command -v torchrun").status != 0) BARESGD_SKIP("torchrun not installed (python3-torch)");
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  if (run("unshare --net true").status != 0) BARESGD_SKIP("cannot create a network namespace (unshare --net)");
  const std::string dir = make_temp_dir("torchrun-standalone");
  const std::string flags = torchrun_train_flags(dir);
  RunResult r =
      run_in_private_network(dir,
                             "exec torchrun --standalone --nproc_per_node 2" + std::string(kTorchrunFlags) +
                                 " --log_dir " + dir + "/logs " + train_bin() + flags + dir + "/torchrun-%r.bin\n",
                             240);
  EXPECT_FALSE(r.timed_out);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("world_size=2 backend=gloo"), std::string::npos) << r.err;
  const std::string rank0 = read_file(dir + "/torchrun-0.bin");
  ASSERT_EQ(rank0.size(), 21840u * 4);
  EXPECT_TRUE(rank0 == read_file(dir + "/torchrun-1.bin"))
      << "the two torchrun workers ended with different parameters";
  EXPECT_TRUE(rank0 == launch_params(dir, flags)) << "torchrun's job and ./launch's differ";
  run("rm -rf " + dir);
}

// Two torchruns, one per "node", meeting in torchrun's c10d rendezvous: before issue 25 both
// failed after 30 s. Both run in one private network namespace (see run_in_private_network).
TEST(TorchrunTrain, RealTorchrunC10dTwoNodesTrainAsOneJob) {
  if (run("command -v torchrun").status != 0) BARESGD_SKIP("torchrun not installed (python3-torch)");
  if (!have_mnist()) BARESGD_SKIP("needs data/MNIST (make data)");
  if (run("unshare --net true").status != 0) BARESGD_SKIP("cannot create a network namespace (unshare --net)");
  const std::string dir = make_temp_dir("torchrun-c10d");
  // Each torchrun's one worker sees a host of its own (LOCAL_WORLD_SIZE=1) and would take both
  // cores, ./launch's two ranks one each; the sums of a batch split over other thread counts
  // differ in the last bits, so both sides get one thread.
  const std::string flags = " --threads 1" + torchrun_train_flags(dir);
  const std::string node =
      "torchrun --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:29611 "
      "--rdzv_id j" +
      std::string(kTorchrunFlags);
  const std::string worker = train_bin() + " --network-interface 127.0.0.1" + flags + dir + "/torchrun-%r.bin";
  RunResult r = run_in_private_network(dir,
                                       node + " --node_rank 1 --log_dir " + dir + "/logs1 " + worker + " > " + dir +
                                           "/node1.out 2>&1 &\n" + "echo $! > " + dir + "/node1.pid\n" + node +
                                           " --node_rank 0 --log_dir " + dir + "/logs0 " + worker + " > " + dir +
                                           "/node0.out 2>&1\nnode0=$?\nwait $(cat " + dir + "/node1.pid)\nnode1=$?\n" +
                                           "echo node0=$node0 node1=$node1\n",
                                       240);
  const std::string pid = read_file(dir + "/node1.pid");
  if (!pid.empty()) ::kill(std::stoi(pid), SIGKILL);  // gone already unless the job hung
  const std::string logs = read_file(dir + "/node0.out") + read_file(dir + "/node1.out");
  EXPECT_FALSE(r.timed_out) << logs;
  ASSERT_EQ(r.out, "node0=0 node1=0\n") << r.err << logs;
  EXPECT_NE(logs.find("world_size=2 backend=gloo"), std::string::npos) << logs;
  const std::string rank0 = read_file(dir + "/torchrun-0.bin");
  ASSERT_EQ(rank0.size(), 21840u * 4);
  EXPECT_TRUE(rank0 == read_file(dir + "/torchrun-1.bin"))
      << "the two torchrun workers ended with different parameters";
  EXPECT_TRUE(rank0 == launch_params(dir, flags)) << "torchrun's job and ./launch's differ";
  run("rm -rf " + dir);
}
