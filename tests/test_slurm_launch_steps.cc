// test_slurm_launch_steps: ./launch inside a Slurm allocation starts its ranks as job steps (one
// `srun --overlap ... launch --agent` per rank), so Slurm sees them: squeue lists the steps,
// scancel stops every rank and the launcher. Against a real one-machine cluster (munged,
// slurmctld, slurmd from Debian's slurm-wlm) that tests/slurm_cluster.sh starts for this suite
// under a temporary directory and stops through its pid files; skipped, with the script's
// reason, only when the daemons cannot start. SrunStepsPlan needs no cluster: a made-up
// allocation's environment and --dry-run.
//
// The ranks run a wrapper that records its pid, its parent's and grandparent's command lines
// (the agent, the step's slurmstepd), then execs ./train.
#include <gtest/gtest.h>
#include <signal.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/slurm_cluster_fixture.h"
#include "tests/test_util.h"

namespace {

using testutil::launch_bin;
using testutil::make_temp_dir;
using testutil::read_file;
using testutil::run;
using testutil::RunResult;
using testutil::train_bin;
using testutil::write_file;

std::string src_dir() { return SlurmClusterFixture::src_dir(); }
std::string data_dir() { return SlurmClusterFixture::data_dir(); }

// cmd with the cluster's environment.
RunResult slurm_run(const std::string& cmd, double timeout_s = 180) {
  return SlurmClusterFixture::slurm(cmd, timeout_s);
}

class SlurmLaunchSteps : public SlurmClusterFixture {
 protected:
  static RunResult slurm(const std::string& cmd, double timeout_s = 180) { return slurm_run(cmd, timeout_s); }
};

// A rank wrapper in d/name: records pid.R, parent.R (the agent's command line), stepd.R (its
// parent's) and job (SLURM_JOB_ID); waits for d/go when wait_for_go; then execs ./train with
// --data-dir and its arguments, then extra.
std::string write_wrapper(const std::string& d, const std::string& name, bool wait_for_go, const std::string& extra) {
  const std::string path = d + "/" + name;
  std::string s = "#!/bin/sh\n";
  s += "R=$BARESGD_RANK\n";
  s += "echo $SLURM_JOB_ID > " + d + "/job\n";
  s += "tr '\\0' ' ' < /proc/$PPID/cmdline > " + d + "/parent.$R\n";
  s += "GP=$(awk '/^PPid:/ {print $2}' /proc/$PPID/status)\n";
  s += "tr '\\0' ' ' < /proc/$GP/cmdline > " + d + "/stepd.$R\n";
  s += "echo $$ > " + d + "/pid.$R.tmp && mv " + d + "/pid.$R.tmp " + d + "/pid.$R\n";
  if (wait_for_go) s += "i=0; while [ ! -e " + d + "/go ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done\n";
  s += "exec " + train_bin() + " --data-dir " + data_dir() + " \"$@\" " + extra + "\n";
  write_file(path, s);
  run("chmod +x " + path);
  return path;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool alive(int pid) { return SlurmClusterFixture::pid_alive(pid); }

std::string cmdline(int pid) {
  std::string c = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& ch : c)
    if (ch == '\0') ch = ' ';
  return c;
}

// The rank's parent is `launch --agent`, whose parent is the slurmstepd of one of the job's
// ordinary steps ("slurmstepd: [JOB.N]"), not the batch step; each rank in a step of its own.
void expect_ranks_in_steps(const std::string& d, const std::string& job, int ranks) {
  std::set<std::string> steps;
  for (int r = 0; r < ranks; ++r) {
    const std::string rs = std::to_string(r);
    EXPECT_NE(read_file(d + "/parent." + rs).find("launch --agent"), std::string::npos)
        << "rank " << r << "'s parent: " << read_file(d + "/parent." + rs);
    const std::string stepd = read_file(d + "/stepd." + rs);
    const std::string want = "slurmstepd: [" + job + ".";
    ASSERT_EQ(stepd.compare(0, want.size(), want), 0) << "rank " << r << "'s agent's parent: " << stepd;
    const std::string step = stepd.substr(want.size(), stepd.find(']') - want.size());
    EXPECT_NE(step, "batch") << "rank " << r;
    steps.insert(step);
  }
  EXPECT_EQ(steps.size(), static_cast<size_t>(ranks)) << "each rank is a step of its own";
}

// The lines of out that start with tag.
int lines_tagged(const std::string& out, const std::string& tag) {
  int n = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, tag.size(), tag) == 0) ++n;
  return n;
}

// salloc -n 2 ./launch: while the ranks run, squeue lists two steps named rank0 and rank1 whose
// tasks are `launch --agent`; the output is tagged as always; the parameters are bit-equal to a
// plain `./launch -np 2 --gloo` run.
TEST_F(SlurmLaunchSteps, SallocLaunchRunsEachRankAsAJobStep) {
  const std::string d = make_temp_dir("slurm_steps_salloc");
  const std::string wrap = write_wrapper(d, "rank.sh", true, "");
  const std::string args = " --epochs 1 --max-steps 5 --seed 3";
  RunResult r =
      slurm("cd " + d + " && { salloc -n 2 " + launch_bin() + " --gloo " + wrap + args + " --dump-params " + d +
            "/params.%r > " + d + "/out 2> " + d + "/err & S=$!; }; " + "for i in $(seq 900); do [ -s " + d +
            "/pid.0 ] && [ -s " + d + "/pid.1 ] && break; sleep 0.1; done; " + "squeue -h -s -j \"$(cat " + d +
            "/job)\" -o '%i %j' > " + d + "/steps; touch " + d + "/go; " + "wait $S; echo $? > " + d + "/rc");
  const std::string out = read_file(d + "/out"), err = read_file(d + "/err");
  ASSERT_EQ(trimmed(read_file(d + "/rc")), "0") << r.out << r.err << out << err;
  const std::string job = trimmed(read_file(d + "/job"));
  ASSERT_FALSE(job.empty()) << err;
  const std::string steps = read_file(d + "/steps");
  EXPECT_EQ(lines_tagged(steps, job + "."), 2) << steps;
  EXPECT_NE(steps.find(" rank0\n"), std::string::npos) << steps;
  EXPECT_NE(steps.find(" rank1\n"), std::string::npos) << steps;
  expect_ranks_in_steps(d, job, 2);
  EXPECT_EQ(lines_tagged(out, "[0]<stdout>:Train Epoch: 1 [0/30000"), 1) << out;
  EXPECT_EQ(lines_tagged(out, "[1]<stdout>:Train Epoch: 1 [0/30000"), 1) << out;
  EXPECT_EQ(lines_tagged(err, "[0]<stderr>:train: summary: world_size=2 backend=gloo"), 1) << err;

  RunResult plain = run(launch_bin() + " -np 2 --gloo " + train_bin() + " --data-dir " + data_dir() + args +
                            " --dump-params " + d + "/plain.%r",
                        180);
  ASSERT_EQ(plain.status, 0) << plain.out << plain.err;
  const std::string p0 = read_file(d + "/params.0");
  ASSERT_EQ(p0.size(), 21840u * 4);
  EXPECT_EQ(read_file(d + "/params.1"), p0);
  EXPECT_EQ(p0, read_file(d + "/plain.0")) << "job steps trained other parameters than ./launch -np 2 --gloo";
}

// scancel JOB, then within 60 s squeue lists no job and every pid is gone.
void scancel_and_expect_gone(const std::string& job, const std::vector<int>& pids) {
  RunResult cancel = slurm_run("scancel " + job);
  ASSERT_EQ(cancel.status, 0) << cancel.err;
  std::string any_alive;
  for (int p : pids) any_alive += " || kill -0 " + std::to_string(p) + " 2>/dev/null";
  RunResult gone = slurm_run("for i in $(seq 600); do squeue -h -j " + job + " 2>/dev/null | grep -q . || { false" +
                                 any_alive + " || exit 0; }; sleep 0.1; done; exit 1",
                             90);
  EXPECT_EQ(gone.status, 0) << "job " << job << " or its processes still there";
  for (int p : pids) EXPECT_FALSE(alive(p)) << "pid " << p << " (" << cmdline(p) << ") outlived scancel";
}

// README.md's sbatch script, as written there, trains through job steps. Its directory holds
// ./launch, ./train (the wrapper) and ./data, as the README's repository root does.
std::string readme_sbatch_script() {
  const std::string readme = read_file(src_dir() + "/README.md");
  for (size_t open = readme.find("```sh\n"); open != std::string::npos; open = readme.find("```sh\n", open)) {
    open += 6;
    size_t close = readme.find("```", open);
    if (close == std::string::npos) return "";
    const std::string block = readme.substr(open, close - open);
    if (block.rfind("#!/bin/bash\n#SBATCH", 0) == 0) return block;
  }
  return "";
}

std::string readme_job_dir(const std::string& tag, bool long_run) {
  const std::string d = make_temp_dir(tag);
  const std::string script = readme_sbatch_script();
  write_file(d + "/job.sh", script);
  run("ln -s " + launch_bin() + " " + d + "/launch && ln -s " + data_dir() + " " + d + "/data");
  // The README's ./train, recording where it runs; the scancel test trains for 100 epochs.
  write_wrapper(d, "train", false, long_run ? "--epochs 100" : "");
  return d;
}

TEST_F(SlurmLaunchSteps, ReadmeSbatchScriptTrainsThroughJobSteps) {
  const std::string script = readme_sbatch_script();
  ASSERT_NE(script.find("#SBATCH"), std::string::npos)
      << "README.md has no ```sh block that is an sbatch script (#!/bin/bash, then #SBATCH lines)";
  ASSERT_NE(script.find("./launch --gloo ./train"), std::string::npos) << script;
  const std::string d = readme_job_dir("slurm_steps_readme", false);
  // -n 2 and -o on the command line win over the script's #SBATCH lines (2 cores here).
  RunResult r = slurm("cd " + d + " && sbatch --wait -n 2 -o " + d + "/out.txt job.sh", 300);
  const std::string log = read_file(d + "/out.txt");
  ASSERT_EQ(r.status, 0) << r.out << r.err << log;
  expect_ranks_in_steps(d, trimmed(read_file(d + "/job")), 2);
  EXPECT_EQ(lines_tagged(log, "[0]<stdout>:Train Epoch: 1 [0/30000"), 1) << log;
  EXPECT_EQ(lines_tagged(log, "[1]<stdout>:Train Epoch: 1 [0/30000"), 1) << log;
  EXPECT_EQ(lines_tagged(log, "[0]<stdout>:Test set: Average loss:"), 1) << log;
}

// scancel JOB while the README script trains: every process of the job — the launcher in the
// batch step, each rank's step with its agent and rank — is gone, and squeue lists no job.
TEST_F(SlurmLaunchSteps, ScancelStopsTheLauncherAndEveryRank) {
  const std::string d = readme_job_dir("slurm_steps_scancel", true);
  RunResult sub = slurm("cd " + d + " && sbatch --parsable -n 2 -o " + d + "/out.txt job.sh");
  ASSERT_EQ(sub.status, 0) << sub.out << sub.err;
  const std::string job = sub.out.substr(0, sub.out.find_first_of("\n;"));
  // Both ranks are training: each has printed a Train line.
  RunResult training = run("for i in $(seq 1200); do [ \"$(grep -c '^\\[[01]\\]<stdout>:Train Epoch: 1 \\[640/' " + d +
                               "/out.txt 2>/dev/null)\" = 2 ] && exit 0; sleep 0.1; done; exit 1",
                           150);
  ASSERT_EQ(training.status, 0) << "ranks did not train: " << read_file(d + "/out.txt");
  expect_ranks_in_steps(d, job, 2);
  // Every process of the job, by step (scontrol listpids: proctrack knows them all).
  RunResult pids = slurm("scontrol listpids " + job);
  ASSERT_EQ(pids.status, 0) << pids.err;
  std::vector<int> all;
  bool launcher = false, agents = false;
  std::istringstream in(pids.out);
  for (std::string line; std::getline(in, line);) {
    int pid = 0;
    if (sscanf(line.c_str(), "%d", &pid) != 1) continue;
    all.push_back(pid);
    const std::string c = cmdline(pid);
    launcher = launcher || c.find("launch --gloo ./train") != std::string::npos;
    agents = agents || c.find("launch --agent") != std::string::npos;
  }
  const int rank0 = std::stoi(read_file(d + "/pid.0")), rank1 = std::stoi(read_file(d + "/pid.1"));
  all.push_back(rank0);
  all.push_back(rank1);
  EXPECT_TRUE(launcher && agents) << pids.out;
  EXPECT_TRUE(alive(rank0) && alive(rank1));

  scancel_and_expect_gone(job, all);
}

// salloc runs ./launch outside any step and does not signal it when the job is cancelled: what
// stops the launcher is its ranks' steps ending. Launched by hand, without steps, all would live on.
TEST_F(SlurmLaunchSteps, ScancelOfAnSallocJobStopsTheLauncherAndEveryRank) {
  const std::string d = make_temp_dir("slurm_steps_salloc_scancel");
  const std::string wrap = write_wrapper(d, "rank.sh", false, "--epochs 100");
  RunResult bg = slurm("cd " + d + " && { salloc -n 2 sh -c 'echo $$ > " + d + "/launcher.pid; exec " + launch_bin() +
                           " --gloo " + wrap + "' > " + d + "/out 2> " + d + "/err < /dev/null & } ; " +
                           "for i in $(seq 1200); do [ \"$(grep -c '^\\[[01]\\]<stdout>:Train Epoch: 1 \\[640/' " + d +
                           "/out 2>/dev/null)\" = 2 ] && exit 0; sleep 0.1; done; exit 1",
                       150);
  ASSERT_EQ(bg.status, 0) << "ranks did not train: " << read_file(d + "/out") << read_file(d + "/err");
  const std::string job = trimmed(read_file(d + "/job"));
  expect_ranks_in_steps(d, job, 2);
  std::vector<int> all = {std::stoi(read_file(d + "/launcher.pid")), std::stoi(read_file(d + "/pid.0")),
                          std::stoi(read_file(d + "/pid.1"))};
  for (int p : all) ASSERT_TRUE(alive(p)) << p;
  EXPECT_NE(cmdline(all[0]).find("--gloo " + wrap), std::string::npos) << cmdline(all[0]);
  scancel_and_expect_gone(job, all);
}

// A stopped agent in a step: the launcher names its silence, kills what is left of the job on
// that node through one more step (`launch --kill-job`) and exits 255; nothing outlives it.
TEST_F(SlurmLaunchSteps, SilentAgentInAStepIsNamedAndItsRankKilled) {
  const std::string d = make_temp_dir("slurm_steps_silent");
  const std::string wrap = write_wrapper(d, "rank.sh", false, "--epochs 100");
  RunResult bg = slurm("cd " + d + " && { salloc -n 2 sh -c 'echo $$ > " + d + "/launcher.pid; exec " + launch_bin() +
                           " --gloo --heartbeat-timeout 3 " + wrap + "' > " + d + "/out 2> " + d +
                           "/err < /dev/null; " + "echo $? > " + d + "/rc; } & " +
                           "for i in $(seq 1200); do [ \"$(grep -c '^\\[[01]\\]<stdout>:Train Epoch: 1 \\[640/' " + d +
                           "/out 2>/dev/null)\" = 2 ] && exit 0; sleep 0.1; done; exit 1",
                       150);
  ASSERT_EQ(bg.status, 0) << "ranks did not train: " << read_file(d + "/out") << read_file(d + "/err");
  expect_ranks_in_steps(d, trimmed(read_file(d + "/job")), 2);
  const int launcher = std::stoi(read_file(d + "/launcher.pid")), rank1 = std::stoi(read_file(d + "/pid.1"));
  const std::string status = read_file("/proc/" + std::to_string(rank1) + "/status");
  const size_t at = status.find("PPid:");
  ASSERT_NE(at, std::string::npos);
  const int agent = std::stoi(status.substr(at + 5));
  ASSERT_NE(cmdline(agent).find("launch --agent"), std::string::npos) << cmdline(agent);
  std::vector<int> all = {launcher, agent, rank1, std::stoi(read_file(d + "/pid.0"))};
  ASSERT_EQ(kill(agent, SIGSTOP), 0);
  RunResult done = run("for i in $(seq 600); do [ -s " + d + "/rc ] && exit 0; sleep 0.1; done; exit 1", 90);
  const std::string err = read_file(d + "/err");
  ASSERT_EQ(done.status, 0) << "the launcher did not end: " << err;
  EXPECT_EQ(trimmed(read_file(d + "/rc")), "255") << err;
  EXPECT_EQ(lines_tagged(err, "launch: localhost (rank 1, agent pid " + std::to_string(agent) +
                                  ") sent no heartbeat for 3 s; stopping the job"),
            1)
      << err;
  EXPECT_EQ(err.find("could not kill"), std::string::npos) << err;
  for (int p : all) EXPECT_FALSE(alive(p)) << "pid " << p << " (" << cmdline(p) << ") outlived the job";
  if (alive(agent)) kill(agent, SIGKILL);
}

TEST_F(SlurmLaunchSteps, MoreRanksThanTheAllocationAreStillRefused) {
  RunResult r = slurm("salloc -n 2 " + launch_bin() + " -np 3 --gloo " + train_bin() + " --epochs 1 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("launch: -np 3 but the Slurm allocation "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" holds 2 tasks (localhost: 2)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Train Epoch"), std::string::npos) << r.out;
}

// Issue 25 case 6 on the real cluster: `srun -n 2 ./launch` started two whole jobs side by side, and
// `salloc -n 2 srun -n 1 ./launch` read the one-task step as the allocation and trained at world
// size 1. Each task now refuses in one line saying what to do instead; nothing trains.
TEST_F(SlurmLaunchSteps, LaunchAsATaskOfAnSrunStepIsRefusedWithWhatToDo) {
  const std::string cmd = " " + launch_bin() + " --gloo " + train_bin() + " --data-dir " + data_dir() + " --epochs 1";
  RunResult two = slurm("salloc -n 2 srun -n 2" + cmd + " 2>&1", 120);
  EXPECT_NE(two.status, 0) << two.out;
  EXPECT_EQ(lines_tagged(two.out, "launch: this is task "), 2) << two.out;
  EXPECT_NE(two.out.find(" of the 2 tasks of Slurm step "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find(": every task would start the whole job; run ./launch once, from the batch script or the "
                         "salloc shell, not under srun"),
            std::string::npos)
      << two.out;
  EXPECT_EQ(two.out.find("Train Epoch"), std::string::npos) << two.out;
  RunResult one = slurm("salloc -n 2 srun -n 1" + cmd + " 2>&1", 120);
  EXPECT_NE(one.status, 0) << one.out;
  EXPECT_EQ(lines_tagged(one.out, "launch: inside Slurm step "), 1) << one.out;
  EXPECT_NE(one.out.find(" of 1 task, whose SLURM_NTASKS and SLURM_TASKS_PER_NODE are the step's, not allocation "),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("without -np the job would run 1 rank; run ./launch once"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("Train Epoch"), std::string::npos) << one.out;
}

// ---- no cluster: a made-up allocation's environment ----

std::string fake_allocation() { return "SLURM_JOB_ID=77 SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=2 "; }

TEST(SrunStepsPlan, DryRunShowsEachRankAsAJobStep) {
  const std::string d = make_temp_dir("srun_steps_dry");
  write_file(d + "/srun", "#!/bin/sh\nexit 99\n");  // found on PATH, never run by a dry run
  run("chmod +x " + d + "/srun");
  RunResult r = run("cd " + d + " && env PATH=" + d + ":/usr/bin:/bin " + fake_allocation() + launch_bin() +
                    " --dry-run --gloo " + train_bin() + " --epochs 1");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("hosts and slots from the Slurm allocation 77 (localhost: 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("localhost  0/2    0/1    srun"), std::string::npos) << r.out;
  const std::string srun = d +
                           "/srun --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist=localhost --overlap "
                           "--kill-on-bad-exit=1 --unbuffered --quiet --export=ALL --chdir=" +
                           d + " --job-name=rank0 " + launch_bin() + " --agent";
  EXPECT_NE(r.out.find(srun), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("then the agent runs: " + train_bin() + " --epochs 1"), std::string::npos) << r.out;
}

TEST(SrunStepsPlan, NoSrunAndHostsFlagStartRanksAsBefore) {
  for (const std::string flag : {"--no-srun", "-H localhost:2"}) {
    RunResult r = run("env PATH=/usr/bin:/bin " + fake_allocation() + launch_bin() + " --dry-run -np 2 --gloo " + flag +
                      " " + train_bin());
    ASSERT_EQ(r.status, 0) << flag << r.out << r.err;
    EXPECT_NE(r.out.find("localhost  0/2    0/1    local"), std::string::npos) << flag << r.out;
    EXPECT_EQ(r.out.find("--overlap"), std::string::npos) << flag << r.out;
    EXPECT_EQ(r.out.find("  srun  "), std::string::npos) << flag << r.out;
  }
}

// The step refusal (launcher/slurm_step.h) with a made-up step's environment, exactly as srun sets it.
std::string fake_step(int tasks, const std::string& step_id = "0") {
  const std::string n = std::to_string(tasks);
  return "SLURM_JOB_ID=77 SLURM_JOB_NODELIST=localhost SLURM_STEP_ID=" + step_id + " SLURM_STEP_NUM_TASKS=" + n +
         " SLURM_NTASKS=" + n + " SLURM_TASKS_PER_NODE=" + n + " SLURM_PROCID=0 ";
}

TEST(SrunStepsPlan, LaunchAsATaskOfAnSrunStepIsOneLine) {
  const std::string launch = launch_bin() + " --gloo sh -c 'echo started'";
  RunResult two = run("env PATH=/usr/bin:/bin " + fake_step(2) + launch);
  EXPECT_EQ(two.status, 2) << two.err;
  EXPECT_EQ(two.err,
            "launch: this is task 0 of the 2 tasks of Slurm step 77.0: every task would start the whole job; run "
            "./launch once, from the batch script or the salloc shell, not under srun (it starts each rank as a job "
            "step itself)\n");
  EXPECT_EQ(two.out, "");
  // With -H too: the two tasks would still start two jobs.
  EXPECT_EQ(run("env PATH=/usr/bin:/bin " + fake_step(2) + launch_bin() + " -np 1 -H localhost:1 --gloo true").status,
            2);
  RunResult one = run("env PATH=/usr/bin:/bin " + fake_step(1, "3") + launch);
  EXPECT_EQ(one.status, 2) << one.err;
  EXPECT_EQ(one.err,
            "launch: inside Slurm step 77.3 of 1 task, whose SLURM_NTASKS and SLURM_TASKS_PER_NODE are the step's, "
            "not allocation 77's: without -np the job would run 1 rank; run ./launch once, from the batch script or "
            "the salloc shell, not under srun (it starts each rank as a job step itself), or give -H or --hostfile\n");
  RunResult more = run("env PATH=/usr/bin:/bin " + fake_step(1, "3") + launch_bin() + " -np 2 --gloo true");
  EXPECT_EQ(more.status, 2) << more.err;
  EXPECT_NE(more.err.find(": -np 2 ranks do not fit in it; run ./launch once"), std::string::npos) << more.err;
  // What still runs: a one-task step with -H (the hosts do not come from the step) or -np 1; the
  // batch script (its step id is not an srun task's) and salloc's shell (no step id).
  for (const std::string& ok : {fake_step(1, "3") + launch_bin() + " -np 2 -H localhost:2 --gloo",
                                fake_step(1, "3") + launch_bin() + " -np 1 --no-srun --gloo",
                                fake_step(2, "batch") + launch_bin() + " --no-srun --gloo",
                                fake_step(2, "4294967294") + launch_bin() + " --no-srun --gloo",
                                fake_allocation() + "SLURM_NTASKS=2 " + launch_bin() + " --no-srun --gloo"}) {
    RunResult r = run("env PATH=/usr/bin:/bin " + ok + " sh -c 'echo started'");
    EXPECT_EQ(r.status, 0) << ok << "\n" << r.err;
    EXPECT_NE(r.out.find("<stdout>:started"), std::string::npos) << ok << "\n" << r.out;
  }
}

TEST(SrunStepsPlan, MissingSrunInAnAllocationIsOneLine) {
  RunResult r = run("env -i PATH=/nonexistent " + fake_allocation() + launch_bin() + " --gloo " + train_bin());
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.err,
            "launch: srun not found in PATH: inside the Slurm allocation 77 the ranks start as job steps through srun "
            "(install slurm-client, or pass --no-srun to start them locally and over ssh)\n");
}

}  // namespace
