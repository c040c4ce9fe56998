// test_slurm_node_names: Slurm clusters whose node names are Slurm's own (issue 25, case 2): the
// one-machine test cluster (tests/slurm_cluster.sh) with NodeName=bsgdnode17, which no DNS or
// /etc/hosts knows, at NodeAddr=127.0.0.2. Plain `srun -n 2 train` and `salloc -n 2 launch --gloo`
// find rank 0's node at its NodeAddr (from scontrol) and train; --network-interface and
// GLOO_SOCKET_IFNAME move rank 0's MUNGE store (and Gloo) to the interface chosen; an unknown
// interface is one line on every task.
#include <gtest/gtest.h>

#include <string>

#include "tests/slurm_cluster_fixture.h"
#include "tests/test_util.h"

namespace {

using testutil::make_temp_dir;
using testutil::read_file;
using testutil::run;
using testutil::RunResult;

const char* kNode = "bsgdnode17";
const char* kNodeAddr = "127.0.0.2";

class SlurmNodeNames : public SlurmClusterFixture {
 public:
  // The fixture's cluster, with a node name that does not resolve.
  static void SetUpTestSuite() {
    dir() = make_temp_dir("slurm_node_names");
    RunResult r = run(std::string("TEST_SLURM_NODE=") + kNode + " TEST_SLURM_NODE_ADDR=" + kNodeAddr + " bash " +
                          src_dir() + "/tests/slurm_cluster.sh start " + dir() + " 2>&1",
                      90);
    started() = r.status == 0;
    if (!started()) why() = r.out;
  }
  void SetUp() override {
    SlurmClusterFixture::SetUp();
    // The point of the suite: the node's name is Slurm's only.
    ASSERT_NE(run(std::string("getent hosts ") + kNode, 30).status, 0) << kNode << " resolves on this machine";
  }
};

int line_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// srun -n 2 train ARGS with env in front; each task's stderr in d/err.<task>, its parameters in
// d/p.<task>.
RunResult srun_train(const std::string& d, const std::string& env, const std::string& args) {
  return SlurmClusterFixture::slurm(env + " srun -n 2 -e " + d + "/err.%t " + SlurmClusterFixture::train_cmd() +
                                        " --epochs 1 --max-steps 3 --dump-params " + d + "/p.%r" + args,
                                    150);
}

// Both tasks wrote the same 21840 parameters.
void expect_one_model(const std::string& d) {
  const std::string p0 = read_file(d + "/p.0");
  EXPECT_EQ(p0.size(), 21840u * 4);
  EXPECT_TRUE(read_file(d + "/p.1") == p0) << "the two tasks ended with different parameters";
}

TEST_F(SlurmNodeNames, SrunTrainsWithANodeNameThatDoesNotResolve) {
  const std::string d = make_temp_dir("nodenames_srun");
  RunResult r = srun_train(d, "", "");
  const std::string err0 = read_file(d + "/err.0");
  ASSERT_EQ(r.status, 0) << r.out << r.err << err0 << read_file(d + "/err.1");
  EXPECT_TRUE(has(err0, std::string("train: rank 0 serves the Gloo rendezvous on ") + kNode + " at " + kNodeAddr + ":"))
      << err0;
  EXPECT_TRUE(has(err0, std::string("(") + kNode + "'s NodeAddr, from scontrol)")) << err0;
  expect_one_model(d);
  run("rm -rf " + d);
}

TEST_F(SlurmNodeNames, SallocLaunchGlooWithANodeNameThatDoesNotResolve) {
  const std::string d = make_temp_dir("nodenames_salloc");
  RunResult r = slurm("cd " + d + " && salloc -n 2 " + testutil::launch_bin() + " --gloo " + train_cmd() +
                          " --epochs 1 --max-steps 3 --dump-params " + d + "/p.%r",
                      180);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "[1]<stdout>:Train Epoch: 1 [0/30000")) << r.out;
  const std::string p0 = read_file(d + "/p.0");
  EXPECT_EQ(p0.size(), 21840u * 4);
  EXPECT_TRUE(read_file(d + "/p.1") == p0);
  run("rm -rf " + d);
}

// lo's address is 127.0.0.1, not the NodeAddr 127.0.0.2 the store binds otherwise.
TEST_F(SlurmNodeNames, MungeStoreBindsTheNetworkInterfaceChosen) {
  const std::string d = make_temp_dir("nodenames_iface");
  RunResult r = srun_train(d, "", " --network-interface lo");
  const std::string err0 = read_file(d + "/err.0");
  ASSERT_EQ(r.status, 0) << r.out << r.err << err0 << read_file(d + "/err.1");
  EXPECT_TRUE(has(err0, std::string("train: rank 0 serves the Gloo rendezvous on ") + kNode + " at 127.0.0.1:"))
      << err0;
  EXPECT_TRUE(has(err0, "(--network-interface lo, on the step's one node)")) << err0;
  expect_one_model(d);
  run("rm -rf " + d);
}

TEST_F(SlurmNodeNames, GlooSocketIfnameIsHonoured) {
  const std::string d = make_temp_dir("nodenames_gloo_if");
  RunResult r = srun_train(d, "GLOO_SOCKET_IFNAME=lo", "");
  const std::string err0 = read_file(d + "/err.0");
  ASSERT_EQ(r.status, 0) << r.out << r.err << err0 << read_file(d + "/err.1");
  EXPECT_TRUE(has(err0, std::string("train: rank 0 serves the Gloo rendezvous on ") + kNode + " at 127.0.0.1:"))
      << err0;
  EXPECT_TRUE(has(err0, "(GLOO_SOCKET_IFNAME=lo, on the step's one node)")) << err0;
  expect_one_model(d);
  run("rm -rf " + d);
}

TEST_F(SlurmNodeNames, UnknownInterfaceIsOneLineOnEveryTask) {
  const std::string d = make_temp_dir("nodenames_bad_if");
  RunResult r = srun_train(d, "GLOO_SOCKET_IFNAME=nosuchif7", " --start-timeout 20");
  EXPECT_NE(r.status, 0);
  for (int t = 0; t < 2; ++t) {
    const std::string err = read_file(d + "/err." + std::to_string(t));
    EXPECT_EQ(line_count(err), 1) << "task " << t << ": " << err;
    EXPECT_TRUE(has(err, "train: error: rank " + std::to_string(t))) << err;
    EXPECT_TRUE(has(err, "GLOO_SOCKET_IFNAME=nosuchif7: no such network interface on this host")) << err;
  }
  RunResult flag = srun_train(d, "", " --network-interface nosuchif7 --start-timeout 20");
  EXPECT_NE(flag.status, 0);
  const std::string err1 = read_file(d + "/err.1");
  EXPECT_EQ(line_count(err1), 1) << err1;
  EXPECT_TRUE(has(err1, "--network-interface nosuchif7: no such network interface on this host")) << err1;
  run("rm -rf " + d);
}

}  // namespace
