// test_launch_dry_run: ./launch --dry-run (the rank table, each rank's environment and the ssh or
// mpirun command, nothing started), --timeline-filename and HOROVOD_TIMELINE reaching local ranks,
// and a Slurm allocation of this machine run with --no-srun.
#include <gtest/gtest.h>

#include "tests/launch_harness.h"

using namespace launchharness;  // NOLINT: the harness is these files' vocabulary

// ============================================================================================
// Integration: --dry-run and --timeline-filename
// ============================================================================================

namespace {

// env_extra that hides every BARESGD_*, OMPI_*, HOROVOD_* and OPENBLAS_NUM_THREADS of ours (and
// child_env's OMPI_MCA_*), so a dry run's environment section is exactly what the launcher adds.
std::vector<std::string> without_shown_variables(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> out;
  for (const std::string& s : child_env({})) {
    std::string name = s.substr(0, s.find('='));
    for (const char* prefix : {"BARESGD_", "OMPI_", "HOROVOD_", "OPENBLAS_NUM_THREADS"})
      if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// Every variable of the test's environment but PATH and HOME, to unset: --mpi forwards each
// exported variable with its own -x, so a test that spells out mpirun's command line starts the
// launcher with just these two.
std::vector<std::string> all_variables_but_path_and_home() {
  std::vector<std::string> out;
  for (const std::string& s : child_env({})) {
    std::string name = s.substr(0, s.find('='));
    if (name != "PATH" && name != "HOME") out.push_back(name);
  }
  return out;
}

int affinity_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? buf : p;
}

}  // namespace

class LaunchDryRun : public LaunchLocal {
 protected:
  void SetUp() override {
    LaunchLocal::SetUp();
    dir_ = "/tmp/" + marker_ + "-dry";
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    // hpc01 and hpc03 on addresses where nothing listens: a run could not reach them.
    std::ofstream(dir_ + "/ssh_config") << "Host hpc01\n  HostName 127.0.0.21\nHost hpc03\n  HostName 127.0.0.23\n"
                                           "Host *\n  Port 1\n  ConnectTimeout 30\n";
  }
  void TearDown() override {
    LaunchLocal::TearDown();
    system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
};

TEST_F(LaunchDryRun, GlooRankTableEnvironmentAndSshCommandsStartNothing) {
  std::string cfg = dir_ + "/ssh_config", timeline = dir_ + "/timeline.json", flag = dir_ + "/started";
  Launch l({"--dry-run", "-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg, "--timeline-filename", timeline,
            "touch", flag},
           without_shown_variables());
  ASSERT_EQ(l.code(30), 0) << l.err();
  EXPECT_EQ(l.err(), "");  // no ssh connection was tried (it would have been refused, and said so)
  char cwd[4096];
  ASSERT_TRUE(getcwd(cwd, sizeof cwd));
  std::string ssh_tail = " -T HOST 'cd " + std::string(cwd) + " && exec env BARESGD_JOB_ID=<job id> " +
                         real_path(launch_bin()) + " --agent'";
  auto ssh_cmd = [&](const std::string& host) {
    std::string tail = ssh_tail;
    return "ssh -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=10 -o ServerAliveCountMax=3 -F " + cfg +
           tail.replace(tail.find("HOST"), 4, host);
  };
  std::string want =
      "dry run: 4 ranks on 2 hosts with --gloo; nothing was started\n"
      "\n"
      "rank  host   local  cross  via  address\n"
      "0     hpc01  0/2    0/2    ssh  127.0.0.21\n"
      "1     hpc01  1/2    0/2    ssh  127.0.0.21\n"
      "2     hpc03  0/2    1/2    ssh  127.0.0.23\n"
      "3     hpc03  1/2    1/2    ssh  127.0.0.23\n"
      "\n"
      "environment of every rank (the secret masked):\n"
      "  BARESGD_SIZE=4\n"
      "  BARESGD_LOCAL_SIZE=2\n"
      "  BARESGD_CROSS_SIZE=2\n"
      "  BARESGD_COMM=gloo\n"
      "  BARESGD_STORE_ADDR=127.0.0.1:<port>\n"
      "  BARESGD_SECRET=******\n"
      "  BARESGD_JOB_ID=<job id>\n"
      "  HOROVOD_TIMELINE=" +
      timeline +
      "\n"
      "  OPENBLAS_NUM_THREADS=<cores>/2\n"
      "\n"
      "environment per rank:\n"
      "rank  BARESGD_RANK  BARESGD_LOCAL_RANK  BARESGD_CROSS_RANK  BARESGD_HOSTNAME  BARESGD_HOST_ADDR\n"
      "0     0             0                   0                   hpc01             127.0.0.21\n"
      "1     1             1                   0                   hpc01             127.0.0.21\n"
      "2     2             0                   1                   hpc03             127.0.0.23\n"
      "3     3             1                   1                   hpc03             127.0.0.23\n"
      "\n"
      "command per host (one process per rank):\n"
      "hpc01  " +
      ssh_cmd("hpc01") +
      "\n"
      "       then the agent runs: touch " +
      flag +
      "\n"
      "hpc03  " +
      ssh_cmd("hpc03") +
      "\n"
      "       then the agent runs: touch " +
      flag + "\n";
  EXPECT_EQ(l.out(), want);
  EXPECT_NE(access(flag.c_str(), F_OK), 0) << "a rank ran";
  EXPECT_NE(access(timeline.c_str(), F_OK), 0);
  EXPECT_FALSE(std::regex_search(l.out(), std::regex("[0-9a-f]{64}"))) << "a secret in the report";
  // The real run fails on the same config: the hosts cannot be reached.
  Launch r({"-np", "4", "--gloo", "-H", "hpc01:2,hpc03:2", "-F", cfg, "--start-timeout", "2", "touch", flag});
  EXPECT_EQ(r.code(30), 1) << r.err();
  EXPECT_TRUE(contains(r.err(), "cannot reach hpc01 over ssh")) << r.err();
}

TEST_F(LaunchDryRun, LocalRanksShowTheirOwnValuesAndProgram) {
  Launch l({"--dry-run", "-np", "2", "--gloo", "sh", "-c", "echo hi"}, without_shown_variables({"BARESGD_TIMING=1"}));
  ASSERT_EQ(l.code(30), 0) << l.err();
  std::string blas = std::to_string(std::max(1, affinity_cores() / 2));
  std::string out = l.out();
  EXPECT_TRUE(contains(out, "dry run: 2 ranks on 1 host with --gloo; nothing was started\n")) << out;
  EXPECT_TRUE(contains(out, "0     localhost  0/2    0/1    local  127.0.0.1\n")) << out;
  EXPECT_TRUE(contains(out, "  BARESGD_HOSTNAME=localhost\n  BARESGD_HOST_ADDR=127.0.0.1\n")) << out;
  EXPECT_TRUE(contains(out, "  BARESGD_TIMING=1\n")) << out;  // the user's BARESGD_* passes on
  EXPECT_TRUE(contains(out, "  OPENBLAS_NUM_THREADS=" + blas + "\n")) << out;
  EXPECT_TRUE(contains(out, "rank  BARESGD_RANK  BARESGD_LOCAL_RANK\n0     0             0\n1     1             1\n"))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\nlocalhost  sh -c 'echo hi' +\\(program /[^ ]*/sh\\)\n"))) << out;
}

TEST_F(LaunchDryRun, MpiShowsTheExactMpirunCommand) {
  std::string cfg = dir_ + "/ssh_config", timeline = dir_ + "/timeline.json", flag = dir_ + "/started";
  Launch l({"--dry-run", "-np", "4", "--mpi", "-H", "hpc01:2,hpc03:2", "-F", cfg, "--timeline-filename", timeline,
            "touch", flag},
           all_variables_but_path_and_home());
  ASSERT_EQ(l.code(30), 0) << l.err();
  // No mpirun and no ssh were run (they would have said something).
  EXPECT_EQ(l.err(), "");
  bool oversubscribed = 4 > affinity_cores();  // all loopback: the 4 ranks share this machine's cores
  std::string mpirun =
      std::string("mpirun ") + (geteuid() == 0 ? "--allow-run-as-root " : "") +
      "-np 4 -H hpc01:2,hpc03:2 -bind-to none -map-by slot --tag-output -x BARESGD_COMM=mpi "
      "-x OPENBLAS_NUM_THREADS -x BARESGD_JOB_ID -x BARESGD_SECRET -x HOME -x PATH -x HOROVOD_TIMELINE "
      "-x OMPI_MCA_btl_tcp_if_include -x OMPI_MCA_oob_tcp_if_include "
      "-x OMPI_MCA_if_base_do_not_resolve -x OMPI_MCA_btl -x OMPI_MCA_pml " +
      (oversubscribed ? "-x OMPI_MCA_mpi_yield_when_idle " : "") + "-mca plm_rsh_args '-F " + cfg + "' touch " + flag +
      "\n";
  std::string out = l.out();
  EXPECT_TRUE(contains(out, "dry run: 4 ranks on 2 hosts with --mpi; nothing was started\n")) << out;
  EXPECT_TRUE(contains(out, "\ncommand:\n" + mpirun)) << out;
  EXPECT_EQ(out.substr(out.size() - mpirun.size()), mpirun) << out;
  for (const std::string& line :
       std::vector<std::string>{"  BARESGD_COMM=mpi", "  BARESGD_SECRET=******", "  BARESGD_JOB_ID=<job id>",
                                "  HOROVOD_TIMELINE=" + timeline, "  OMPI_MCA_btl_tcp_if_include=lo",
                                "  OMPI_MCA_pml=ob1", "  OMPI_MCA_btl=self,tcp"})
    EXPECT_TRUE(contains(out, "\n" + line + "\n")) << line << "\n" << out;
  EXPECT_TRUE(contains(out, "3     hpc03  1/2    1/2    ssh  127.0.0.23\n")) << out;
  EXPECT_FALSE(std::regex_search(out, std::regex("[0-9a-f]{64}"))) << "a secret in the report";
  EXPECT_NE(access(flag.c_str(), F_OK), 0) << "a rank ran";
}

TEST_F(LaunchDryRun, UnwritableTimelineIsRefusedBeforeAnythingStarts) {
  std::string file = dir_ + "/plain-file", flag = dir_ + "/started";
  std::ofstream(file) << "x";
  struct {
    std::vector<std::string> args, env;
    std::string named;
  } cases[] = {
      {{"-np", "2", "--gloo", "--timeline-filename", file + "/t.json", "touch", flag},
       {},
       "--timeline-filename " + file + "/t.json: "},
      {{"-np", "2", "--gloo", "--timeline-filename", dir_ + "/none/t.json", "touch", flag},
       {},
       "--timeline-filename " + dir_ + "/none/t.json: "},
      {{"-np", "2", "--mpi", "--timeline-filename", dir_, "touch", flag}, {}, "--timeline-filename " + dir_ + ": "},
      {{"-np", "2", "--gloo", "touch", flag},
       {"HOROVOD_TIMELINE=" + dir_ + "/none/e.json"},
       "HOROVOD_TIMELINE=" + dir_ + "/none/e.json: "},
      {{"--dry-run", "-np", "2", "--gloo", "--timeline-filename", dir_ + "/none/t.json", "touch", flag},
       {},
       "--timeline-filename " + dir_ + "/none/t.json: "},
  };
  for (const auto& c : cases) {
    Launch l(c.args, c.env);
    EXPECT_EQ(l.code(30), 1) << l.err();
    auto lines = split_lines(l.err());
    ASSERT_EQ(lines.size(), 1u) << l.err();
    EXPECT_EQ(lines[0].rfind("launch: " + c.named + "cannot write the timeline there: ", 0), 0u) << lines[0];
    EXPECT_TRUE(l.out().empty()) << l.out();
    EXPECT_NE(access(flag.c_str(), F_OK), 0) << "a rank ran: " << c.named;
  }
}

// Inside a Slurm allocation (a fake one: the variables salloc/sbatch set) without -H: the
// allocation's hosts and slots, -np from it; a larger -np is refused; -H still wins. (--no-srun:
// the ranks go over ssh to the test's ssh-config hosts; as job steps: test_slurm_launch_steps.cc.)
TEST_F(LaunchDryRun, SlurmAllocationGivesHostsSlotsAndNp) {
  std::string cfg = dir_ + "/ssh_config", flag = dir_ + "/started";
  std::vector<std::string> slurm = without_shown_variables(
      {"SLURM_JOB_ID=1234", "SLURM_JOB_NODELIST=hpc[01,03]", "SLURM_TASKS_PER_NODE=2(x2)", "SLURM_NNODES=2"});
  Launch l({"--dry-run", "--gloo", "--no-srun", "-F", cfg, "touch", flag}, slurm);
  ASSERT_EQ(l.code(30), 0) << l.err();
  EXPECT_EQ(l.err(), "");
  const std::string head =
      "dry run: 4 ranks on 2 hosts with --gloo; nothing was started\n"
      "hosts and slots from the Slurm allocation 1234 (hpc[01,03]: 2(x2))\n"
      "\n"
      "rank  host   local  cross  via  address\n"
      "0     hpc01  0/2    0/2    ssh  127.0.0.21\n"
      "1     hpc01  1/2    0/2    ssh  127.0.0.21\n"
      "2     hpc03  0/2    1/2    ssh  127.0.0.23\n"
      "3     hpc03  1/2    1/2    ssh  127.0.0.23\n"
      "\n";
  EXPECT_EQ(l.out().substr(0, head.size()), head) << l.out();
  std::vector<std::string> three = slurm;
  three.push_back("SLURM_NTASKS=3");
  Launch n({"--dry-run", "--mpi", "-F", cfg, "touch", flag}, three);
  ASSERT_EQ(n.code(30), 0) << n.err();
  EXPECT_TRUE(contains(n.out(), "dry run: 3 ranks on 2 hosts with --mpi; nothing was started\n")) << n.out();
  EXPECT_TRUE(contains(n.out(), " -np 3 -H hpc01:2,hpc03:1 ")) << n.out();
  Launch big({"--dry-run", "-np", "8", "--gloo", "-F", cfg, "touch", flag}, slurm);
  EXPECT_EQ(big.code(30), 2);
  EXPECT_EQ(big.err(), "launch: -np 8 but the Slurm allocation 1234 holds 4 tasks (hpc[01,03]: 2(x2))\n");
  EXPECT_EQ(big.out(), "");
  Launch h({"--dry-run", "-np", "1", "--gloo", "-H", "localhost", "touch", flag}, slurm);
  ASSERT_EQ(h.code(30), 0) << h.err();
  EXPECT_TRUE(contains(h.out(), "dry run: 1 rank on 1 host with --gloo; nothing was started\n\n")) << h.out();
  Launch bad({"--dry-run", "--gloo", "touch", flag},
             {"SLURM_JOB_ID=1234", "SLURM_JOB_NODELIST=hpc[03-01]", "SLURM_TASKS_PER_NODE=1"});
  EXPECT_EQ(bad.code(30), 2);
  EXPECT_EQ(bad.err(),
            "launch: in a Slurm allocation: SLURM_JOB_NODELIST='hpc[03-01]': reversed range '03-01' at "
            "character 5 (LO must be <= HI)\n");
  Launch none({"--gloo", "touch", flag});
  EXPECT_EQ(none.code(30), 2);
  EXPECT_EQ(none.err(), "launch: -np N is required (the number of ranks)\n");
  EXPECT_NE(access(flag.c_str(), F_OK), 0) << "a rank ran";
}

// An allocation of this machine, with --no-srun: the ranks start here, as many as SLURM_NTASKS
// says.
TEST_F(LaunchDryRun, SlurmAllocationOfThisMachineRunsLocalRanks) {
  Launch l({"--gloo", "--no-srun", "sh", "-c", "echo rank=$BARESGD_RANK/$BARESGD_SIZE local=$BARESGD_LOCAL_SIZE"},
           {"SLURM_JOB_ID=77", "SLURM_JOB_NODELIST=localhost", "SLURM_TASKS_PER_NODE=4", "SLURM_NTASKS=3"});
  ASSERT_EQ(l.code(30), 0) << l.err();
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(contains(l.out(), "[" + std::to_string(r) + "]<stdout>:rank=" + std::to_string(r) + "/3 local=3\n"))
        << l.out();
  EXPECT_FALSE(contains(l.out(), "[3]")) << l.out();
}

TEST_F(LaunchDryRun, TimelineVariableReachesLocalRanks) {
  std::string t = dir_ + "/t.json", e = dir_ + "/env.json";
  const char* show = "echo T=$HOROVOD_TIMELINE";
  Launch flag({"-np", "2", "--gloo", "--timeline-filename", t, "sh", "-c", show}, {"HOROVOD_TIMELINE"});
  ASSERT_EQ(flag.code(30), 0) << flag.err();
  EXPECT_TRUE(contains(flag.out(), "[0]<stdout>:T=" + t + "\n") && contains(flag.out(), "[1]<stdout>:T=" + t + "\n"))
      << flag.out();
  Launch env({"-np", "2", "--gloo", "sh", "-c", show}, {"HOROVOD_TIMELINE=" + e});
  ASSERT_EQ(env.code(30), 0) << env.err();
  EXPECT_TRUE(contains(env.out(), "[1]<stdout>:T=" + e + "\n")) << env.out();
  Launch both({"-np", "1", "--gloo", "--timeline-filename", t, "sh", "-c", show}, {"HOROVOD_TIMELINE=" + e});
  ASSERT_EQ(both.code(30), 0) << both.err();
  EXPECT_EQ(both.out(), "[0]<stdout>:T=" + t + "\n");  // the flag wins
  Launch mpi({"-np", "2", "--mpi", "--timeline-filename", t, "sh", "-c", show}, {"HOROVOD_TIMELINE"});
  ASSERT_EQ(mpi.code(60), 0) << mpi.err();
  EXPECT_TRUE(contains(mpi.out(), "[0]<stdout>:T=" + t + "\n") && contains(mpi.out(), "[1]<stdout>:T=" + t + "\n"))
      << mpi.out();
}
