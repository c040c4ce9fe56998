// test_horovod_flags: ./launch against horovodrun's flag list (launcher/horovod_flags.h), its
// HOROVOD_* variables and its --config-file (launcher/horovod_config.h): every flag of Horovod's
// horovod/runner/launch.py is in the table, refused ones are one line naming the flag and why,
// implemented ones have their effect on the ranks, and docs/horovod.md's table says what the code does.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/horovod_config.h"
#include "launcher/horovod_flags.h"
#include "launcher/options.h"
#include "tests/skip_policy.h"
#include "tests/test_util.h"

namespace {

using testutil::read_file;
using testutil::write_file;
using Strings = std::vector<std::string>;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
bool one_line(const std::string& s) { return !s.empty() && s.find_first_of("\n\r") == std::string::npos; }

// Every option of horovodrun's parse_args (Horovod's horovod/runner/launch.py; argparse adds
// -h/--help), aliases together, with the number of words each takes.
struct LaunchPyFlag {
  std::set<std::string> names;
  int values;
};
const std::vector<LaunchPyFlag> kLaunchPy = {
    {{"-v", "--version"}, 0},
    {{"-np", "--num-proc"}, 1},
    {{"-cb", "--check-build"}, 0},
    {{"--disable-cache"}, 0},
    {{"--start-timeout"}, 1},
    {{"--network-interfaces"}, 1},
    {{"--network-interface"}, 1},
    {{"--output-filename"}, 1},
    {{"--verbose"}, 0},
    {{"--config-file"}, 1},
    {{"-p", "--ssh-port"}, 1},
    {{"-i", "--ssh-identity-file"}, 1},
    {{"--fusion-threshold-mb"}, 1},
    {{"--cycle-time-ms"}, 1},
    {{"--cache-capacity"}, 1},
    {{"--hierarchical-allreduce"}, 0},
    {{"--no-hierarchical-allreduce"}, 0},
    {{"--hierarchical-allgather"}, 0},
    {{"--no-hierarchical-allgather"}, 0},
    {{"--torus-allreduce"}, 0},
    {{"--no-torus-allreduce"}, 0},
    {{"--autotune"}, 0},
    {{"--no-autotune"}, 0},
    {{"--autotune-log-file"}, 1},
    {{"--autotune-warmup-samples"}, 1},
    {{"--autotune-steps-per-sample"}, 1},
    {{"--autotune-bayes-opt-max-samples"}, 1},
    {{"--autotune-gaussian-process-noise"}, 1},
    {{"--min-np", "--min-num-proc"}, 1},
    {{"--max-np", "--max-num-proc"}, 1},
    {{"--slots-per-host"}, 1},
    {{"--elastic-timeout"}, 1},
    {{"--reset-limit"}, 1},
    {{"--blacklist-cooldown-range"}, 2},
    {{"--timeline-filename"}, 1},
    {{"--timeline-mark-cycles"}, 0},
    {{"--no-timeline-mark-cycles"}, 0},
    {{"--no-stall-check"}, 0},
    {{"--stall-check"}, 0},
    {{"--stall-check-warning-time-seconds"}, 1},
    {{"--stall-check-shutdown-time-seconds"}, 1},
    {{"--mpi-threads-disable"}, 0},
    {{"--no-mpi-threads-disable"}, 0},
    {{"--mpi-args"}, 1},
    {{"--tcp"}, 0},
    {{"--binding-args"}, 1},
    {{"--num-nccl-streams"}, 1},
    {{"--thread-affinity"}, 1},
    {{"--gloo-timeout-seconds"}, 1},
    {{"--log-level"}, 1},
    {{"--log-with-timestamp"}, 0},
    {{"--log-without-timestamp"}, 0},
    {{"-prefix-timestamp", "--prefix-output-with-timestamp"}, 0},
    {{"--log-hide-timestamp"}, 0},
    {{"--no-log-hide-timestamp"}, 0},
    {{"-H", "--hosts"}, 1},
    {{"-hostfile", "--hostfile"}, 1},
    {{"--host-discovery-script"}, 1},
    {{"--gloo"}, 0},
    {{"--mpi"}, 0},
    {{"--jsrun"}, 0},
    {{"-h", "--help"}, 0},
};

// A map as the environment parse_launch_options reads.
EnvLookup env_of(const std::map<std::string, std::string>& m) {
  return [m](const char* name) -> const char* {
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}
const std::map<std::string, std::string> kNoEnv;

std::string usage_error(const Strings& args, const std::map<std::string, std::string>& env = kNoEnv) {
  try {
    parse_launch_options(args, env_of(env));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string env_value(const LaunchOptions& o, const std::string& name) {
  for (const auto& kv : o.horovod_env)
    if (kv.first == name) return kv.second;
  return "<unset>";
}

// This process's environment without HOROVOD_* and SLURM_* (the tests set their own), plus extra.
std::vector<std::string> clean_env(const Strings& extra = {}) {
  std::vector<std::string> env;
  for (const std::string& e : testutil::current_environment())
    if (e.rfind("HOROVOD_", 0) != 0 && e.rfind("SLURM_", 0) != 0) env.push_back(e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

testutil::ProcResult run_launch(const Strings& args, const Strings& extra_env = {}, double timeout_s = 60) {
  Strings argv = {testutil::launch_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testutil::run_processes({{argv, clean_env(extra_env)}}, timeout_s).procs[0];
}

// Arguments for a flag that takes n values.
Strings with_values(const std::string& flag, int n) {
  Strings a = {flag};
  for (int k = 0; k < n; ++k) a.push_back("1");
  return a;
}

// ---- the table --------------------------------------------------------------------------------

TEST(HorovodFlags, EveryFlagOfHorovodrunIsInTheTable) {
  for (const LaunchPyFlag& want : kLaunchPy) {
    for (const std::string& name : want.names) {
      const HorovodFlag* row = find_horovod_flag(name);
      ASSERT_NE(row, nullptr) << name << " of horovodrun is missing from launcher/horovod_flags.cc";
      EXPECT_EQ(std::set<std::string>(row->names.begin(), row->names.end()), want.names) << name;
      EXPECT_EQ(row->values, want.values) << name;
      EXPECT_TRUE(one_line(row->meaning)) << name;
    }
  }
  // And nothing else: the table is horovodrun's flags, not ./launch's own.
  EXPECT_EQ(horovod_flags().size(), kLaunchPy.size());
}

TEST(HorovodFlags, RefusedFlagsAreOneLineNamingTheFlagAndWhy) {
  const std::map<std::string, std::string> kind = {
      {"--torus-allreduce", "GPU-only"},
      {"--num-nccl-streams", "GPU-only"},
      {"--autotune", "autotune-only"},
      {"--autotune-log-file", "autotune-only"},
      {"--autotune-warmup-samples", "autotune-only"},
      {"--autotune-steps-per-sample", "autotune-only"},
      {"--autotune-bayes-opt-max-samples", "autotune-only"},
      {"--autotune-gaussian-process-noise", "autotune-only"},
      {"--fusion-threshold-mb", "fused buffer"},
      {"--cycle-time-ms", "fusion cycle"},
      {"--cache-capacity", "response cache"},
      {"--jsrun", "jsrun"},
  };
  int refused = 0;
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status != FlagStatus::kRefused) continue;
    for (const std::string& name : f.names) {
      ++refused;
      Strings args = {"-np", "1", "--gloo"};
      Strings flag = with_values(name, f.values);
      args.insert(args.end(), flag.begin(), flag.end());
      args.push_back("true");
      std::string err = usage_error(args);
      EXPECT_TRUE(one_line(err)) << name << ": " << err;
      EXPECT_EQ(err.rfind(name + " is not supported: ", 0), 0u) << err;
      EXPECT_TRUE(contains(err, f.meaning)) << err;
      auto k = kind.find(name);
      if (k != kind.end()) {
        EXPECT_TRUE(contains(err, k->second)) << name << ": " << err;
      }
    }
  }
  EXPECT_GE(refused, 20);  // --blacklist-cooldown-range is implemented now
  // The real binary: exit 2, one line on stderr, nothing started.
  for (const char* name :
       {"--autotune", "--torus-allreduce", "--autotune-bayes-opt-max-samples", "--fusion-threshold-mb"}) {
    const HorovodFlag* f = find_horovod_flag(name);
    Strings args = with_values(name, f->values);
    args.insert(args.begin(), {"-np", "1", "--gloo"});
    args.insert(args.end(), {"sh", "-c", "echo started"});
    auto r = run_launch(args);
    EXPECT_EQ(r.status, 2) << name;
    EXPECT_EQ(r.err, "launch: " + refusal_line(*f, name) + "\n") << name;
    EXPECT_EQ(r.out, "") << name;
  }
}

TEST(HorovodFlags, NoOpFlagsAreAcceptedAndChangeNothing) {
  const Strings base = {"-np", "2", "--gloo", "true"};
  LaunchOptions plain = parse_launch_options(base, env_of(kNoEnv));
  int noops = 0;
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status != FlagStatus::kNoOp) continue;
    for (const std::string& name : f.names) {
      ++noops;
      Strings args = {"-np", "2", "--gloo", name, "true"};
      LaunchOptions o;
      ASSERT_NO_THROW(o = parse_launch_options(args, env_of(kNoEnv))) << name;
      EXPECT_EQ(o.command, plain.command) << name;
      EXPECT_EQ(o.horovod_env, plain.horovod_env) << name;
      EXPECT_EQ(o.mpi_args, plain.mpi_args) << name;
      EXPECT_EQ(o.verbose, plain.verbose) << name;
      EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", name + "=1", "true"}), name + " takes no value")) << name;
    }
  }
  EXPECT_GE(noops, 8);
}

TEST(HorovodFlags, HelpListsEveryFlagThatIsNotImplementedWithItsReason) {
  const std::string help = launch_help_text();
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status == FlagStatus::kImplemented) continue;
    std::string names;
    for (const std::string& n : f.names) names += (names.empty() ? "" : ", ") + n;
    EXPECT_TRUE(contains(help, "  " + names + "  " + flag_status_name(f.status) + ": " + f.meaning + "\n"))
        << f.names[0];
  }
}

// ---- implemented flags --------------------------------------------------------------------------

TEST(HorovodFlags, VersionAndCheckBuildPrintTheVersionAsHorovodrun) {
  // horovodrun's -v is argparse's version action (not --verbose): it prints and exits at once.
  for (const Strings& args : {Strings{"-v"}, Strings{"--version"}, Strings{"-cb"}, Strings{"--check-build"},
                              Strings{"-np", "2", "--gloo", "-v", "sh", "-c", "echo started"}}) {
    auto r = run_launch(args);
    EXPECT_EQ(r.status, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out.rfind("baresgd-launch ", 0), 0u) << r.out;
    EXPECT_TRUE(contains(r.out, "backends: ")) << r.out;
    EXPECT_FALSE(contains(r.out, "started")) << r.out;
    EXPECT_EQ(r.err, "");
  }
  EXPECT_TRUE(parse_launch_options({"-v"}, env_of(kNoEnv)).version);
  // argparse refuses a value on these; so do we, rather than print a version for "--version=x".
  for (const std::string name : {"--version", "--check-build"})
    EXPECT_TRUE(contains(usage_error({name + "=1"}), name + " takes no value")) << name;
  EXPECT_FALSE(parse_launch_options({"-np", "1", "--gloo", "--verbose", "x"}, env_of(kNoEnv)).version);
  EXPECT_TRUE(parse_launch_options({"-np", "1", "--gloo", "--verbose", "x"}, env_of(kNoEnv)).verbose);
}

TEST(HorovodFlags, AliasesAndMpiBindingArgs) {
  auto o = parse_launch_options({"-np", "2", "--mpi", "-hostfile", "hf", "-prefix-timestamp", "--binding-args",
                                 "-bind-to core -map-by socket --rankfile rf", "true"},
                                env_of(kNoEnv));
  EXPECT_EQ(o.hostfile, "hf");
  EXPECT_TRUE(o.timestamp);
  EXPECT_EQ(o.bind_to, "core");
  EXPECT_EQ(o.map_by, "socket");
  EXPECT_EQ(o.mpi_args, (Strings{"--rankfile", "rf"}));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--mpi", "--binding-args", "-bind-to", "true"}),
                       "--binding-args: -bind-to needs a value"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--binding-args", "-bind-to core", "true"}),
                       "--binding-args is for --mpi"));
}

TEST(HorovodFlags, LoggingFlagsSetTheRanksHorovodVariables) {
  auto o = parse_launch_options(
      {"-np", "2", "--gloo", "--log-level", "debug", "--log-without-timestamp", "--gloo-timeout-seconds", "7", "true"},
      env_of(kNoEnv));
  EXPECT_EQ(env_value(o, "HOROVOD_LOG_LEVEL"), "DEBUG");
  EXPECT_EQ(env_value(o, "HOROVOD_LOG_HIDE_TIME"), "1");
  EXPECT_EQ(env_value(o, "HOROVOD_GLOO_TIMEOUT_SECONDS"), "7");
  auto w = parse_launch_options({"-np", "2", "--gloo", "--log-with-timestamp", "true"}, env_of(kNoEnv));
  EXPECT_EQ(env_value(w, "HOROVOD_LOG_HIDE_TIME"), "0");
  EXPECT_EQ(env_value(w, "HOROVOD_LOG_LEVEL"), "<unset>");
  auto old = parse_launch_options({"-np", "2", "--gloo", "--log-hide-timestamp", "true"}, env_of(kNoEnv));
  EXPECT_EQ(env_value(old, "HOROVOD_LOG_HIDE_TIME"), "1");
  for (const Strings& bad : {Strings{"--log-level", "LOUD"}, Strings{"--gloo-timeout-seconds", "0"},
                             Strings{"--gloo-timeout-seconds", "1.5"}, Strings{"--gloo-timeout-seconds", "x"}}) {
    Strings args = {"-np", "2", "--gloo"};
    args.insert(args.end(), bad.begin(), bad.end());
    args.push_back("true");
    std::string err = usage_error(args);
    EXPECT_TRUE(one_line(err)) << bad[0] << " " << bad[1] << ": " << err;
    EXPECT_EQ(err.rfind(bad[0] + " '" + bad[1] + "'", 0), 0u) << err;
  }
  // On the ranks: the variables, over the caller's (the flag wins), in both modes.
  for (const char* mode : {"--gloo", "--mpi"}) {
    auto r = run_launch(
        {"-np", "2", mode, "--log-level", "INFO", "--log-with-timestamp", "--gloo-timeout-seconds", "9", "sh", "-c",
         "echo ${BARESGD_RANK:-$OMPI_COMM_WORLD_RANK}:$HOROVOD_LOG_LEVEL:$HOROVOD_LOG_HIDE_TIME:"
         "$HOROVOD_GLOO_TIMEOUT_SECONDS"},
        {"HOROVOD_LOG_LEVEL=ERROR", "HOROVOD_GLOO_TIMEOUT_SECONDS=3"}, 120);
    ASSERT_EQ(r.status, 0) << mode << ": " << r.err;
    EXPECT_TRUE(contains(r.out, ":0:INFO:0:9\n")) << mode << ": " << r.out;
    EXPECT_TRUE(contains(r.out, ":1:INFO:0:9\n")) << mode << ": " << r.out;
  }
}

TEST(HorovodFlags, NetworkInterfacesPinTheBindAddress) {
  auto o = parse_launch_options(
      {"-np", "2", "--gloo", "--network-interfaces", "lo,lo", "--network-interface", "lo", "true"}, env_of(kNoEnv));
  EXPECT_EQ(o.network_interface, "lo");
  std::string two = usage_error({"-np", "2", "--gloo", "--network-interfaces", "lo,eth0", "true"});
  EXPECT_TRUE(one_line(two)) << two;
  EXPECT_TRUE(contains(two, "--network-interfaces eth0 after lo")) << two;
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--network-interfaces", "lo,", "true"}), "empty name"));
  // The store binds lo's address and the local ranks get it.
  auto r = run_launch({"-np", "2", "--gloo", "--network-interfaces", "lo", "sh", "-c",
                       "echo $BARESGD_RANK@$BARESGD_HOST_ADDR@${BARESGD_STORE_ADDR%:*}"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, ":0@127.0.0.1@127.0.0.1\n")) << r.out;
  EXPECT_TRUE(contains(r.out, ":1@127.0.0.1@127.0.0.1\n")) << r.out;
  // Open MPI is pinned to it too.
  auto d = run_launch({"--dry-run", "-np", "2", "--mpi", "--network-interface", "lo", "/bin/true"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(contains(d.out, "OMPI_MCA_btl_tcp_if_include=lo")) << d.out;
  EXPECT_TRUE(contains(d.out, "OMPI_MCA_oob_tcp_if_include=lo")) << d.out;
  // An interface this machine does not have: one line naming it, nothing started.
  auto bad = run_launch({"-np", "2", "--gloo", "--network-interfaces", "nosuchif9", "sh", "-c", "echo started"});
  EXPECT_NE(bad.status, 0);
  EXPECT_FALSE(contains(bad.out, "started"));
  EXPECT_TRUE(contains(bad.err, "nosuchif9")) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(HorovodFlags, OutputFilenamePadsTheRankAsHorovodrun) {
  // horovodrun's gloo_run: DIR/rank.<rank zero-padded to the digits of size-1>/stdout|stderr.
  for (int np : {1, 10, 12}) {
    std::string dir = testutil::make_temp_dir("hvd-out");
    auto r = run_launch({"-np", std::to_string(np), "--gloo", "--output-filename", dir + "/o", "sh", "-c",
                         "echo out$BARESGD_RANK; echo err$BARESGD_RANK >&2"},
                        {}, 120);
    ASSERT_EQ(r.status, 0) << r.err;
    int width = np <= 10 ? 1 : 2;
    for (int k = 0; k < np; ++k) {
      std::string rank = std::to_string(k);
      std::string padded = std::string(width - rank.size(), '0') + rank;
      EXPECT_EQ(read_file(dir + "/o/rank." + padded + "/stdout"), "out" + rank + "\n") << np << " " << padded;
      EXPECT_EQ(read_file(dir + "/o/rank." + padded + "/stderr"), "err" + rank + "\n") << np << " " << padded;
    }
    testutil::run("rm -rf '" + dir + "'");
  }
  // --mpi: the same layout (./launch writes the files from mpirun's re-tagged output).
  std::string dir = testutil::make_temp_dir("hvd-out");
  auto m = run_launch(
      {"-np", "2", "--mpi", "--output-filename", dir + "/o", "sh", "-c", "echo out$OMPI_COMM_WORLD_RANK"}, {}, 120);
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_EQ(read_file(dir + "/o/rank.0/stdout"), "out0\n");
  EXPECT_EQ(read_file(dir + "/o/rank.1/stdout"), "out1\n");
  testutil::run("rm -rf '" + dir + "'");
}

// --gloo-timeout-seconds and --timeline-filename on a real 2-rank ./train job.
TEST(HorovodFlags, GlooTimeoutAndTimelineReachTrain) {
  if (!testutil::have_mnist()) BARESGD_SKIP("no MNIST in ./data (run `make data`)");
  std::string dir = testutil::make_temp_dir("hvd-train");
  auto r = run_launch({"-np", "2", "--gloo", "--gloo-timeout-seconds", "7", "--timeline-filename", dir + "/t.json",
                       testutil::train_bin(), "--max-steps", "2", "--threads", "1", "--metrics", dir + "/m.jsonl"},
                      {"HOROVOD_GLOO_TIMEOUT_SECONDS=3"}, 300);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(read_file(dir + "/m.jsonl"), "\"comm_timeout\":7,")) << read_file(dir + "/m.jsonl");
  const std::string trace = read_file(dir + "/t.json");
  EXPECT_TRUE(contains(trace, "\"rank 0 @ ")) << trace.substr(0, 500);
  EXPECT_TRUE(contains(trace, "\"rank 1 @ ")) << trace.substr(0, 500);
  EXPECT_TRUE(contains(trace, "\"allreduce\"")) << trace.substr(0, 500);
  // ./train's own --comm-timeout wins over the variable.
  auto own = testutil::run_processes({{{testutil::train_bin(), "--max-steps", "1", "--threads", "1", "--comm-timeout",
                                        "11", "--metrics", dir + "/m2.jsonl"},
                                       clean_env({"HOROVOD_GLOO_TIMEOUT_SECONDS=7"})}},
                                     300)
                 .procs[0];
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_TRUE(contains(read_file(dir + "/m2.jsonl"), "\"comm_timeout\":11,"));
  auto bad = testutil::run_processes(
                 {{{testutil::train_bin(), "--max-steps", "1"}, clean_env({"HOROVOD_GLOO_TIMEOUT_SECONDS=soon"})}}, 60)
                 .procs[0];
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "train: error: HOROVOD_GLOO_TIMEOUT_SECONDS='soon' is not a whole number of seconds >= 1\n");
  testutil::run("rm -rf '" + dir + "'");
}

// ---- HOROVOD_* variables ----------------------------------------------------------------------------

TEST(HorovodFlags, HorovodVariablesAreReadAndTheCommandLineWins) {
  const Strings args = {"-np", "2", "--gloo", "true"};
  EXPECT_DOUBLE_EQ(parse_launch_options(args, env_of({{"HOROVOD_START_TIMEOUT", "12"}})).start_timeout, 12);
  EXPECT_DOUBLE_EQ(parse_launch_options({"-np", "2", "--gloo", "--start-timeout", "5", "true"},
                                        env_of({{"HOROVOD_START_TIMEOUT", "12"}}))
                       .start_timeout,
                   5);
  // Bad values: one line naming the variable; a flag given instead means the variable is not read.
  for (const auto& [name, value] : std::map<std::string, std::string>{{"HOROVOD_START_TIMEOUT", "soon"},
                                                                      {"HOROVOD_GLOO_TIMEOUT_SECONDS", "0"},
                                                                      {"HOROVOD_LOG_LEVEL", "LOUD"},
                                                                      {"HOROVOD_LOG_HIDE_TIME", "2"}}) {
    std::string err = usage_error(args, {{name, value}});
    EXPECT_TRUE(one_line(err)) << name;
    EXPECT_EQ(err.rfind(name + "='" + value + "'", 0), 0u) << err;
  }
  EXPECT_EQ(usage_error({"-np", "2", "--gloo", "--gloo-timeout-seconds", "4", "true"},
                        {{"HOROVOD_GLOO_TIMEOUT_SECONDS", "0"}}),
            "");
  EXPECT_EQ(usage_error({"-np", "2", "--gloo", "--log-level", "INFO", "true"}, {{"HOROVOD_LOG_LEVEL", "LOUD"}}), "");
  // A refused flag's variable set (a site's module may set it for every job): accepted, one
  // warning naming it, its flag and why; its "off" value says nothing.
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status != FlagStatus::kRefused || f.env.empty()) continue;
    const std::string on = f.env_off == "1" ? "0" : "1";
    LaunchOptions o;
    ASSERT_NO_THROW(o = parse_launch_options(args, env_of({{f.env, on}}))) << f.env;
    ASSERT_EQ(o.notices.size(), 1u) << f.env;
    EXPECT_TRUE(one_line(o.notices[0])) << o.notices[0];
    EXPECT_EQ(o.notices[0],
              "warning: " + f.env + "=" + on + " is ignored (horovodrun's " + f.names[0] + "): " + f.meaning);
    if (!f.env_off.empty()) {
      EXPECT_TRUE(parse_launch_options(args, env_of({{f.env, f.env_off}})).notices.empty()) << f.env;
    }
  }
}

// Issue 25 case 6: a site module's HOROVOD_FUSION_THRESHOLD=67108864 stopped `./launch -np 2 --gloo`
// with exit 2 (horovodrun accepts it). Now each such variable is one warning line and the job runs.
TEST(HorovodFlags, SiteTuningVariablesAreWarningsNotErrors) {
  auto r = run_launch({"-np", "2", "--gloo", "sh", "-c", "echo started"},
                      {"HOROVOD_FUSION_THRESHOLD=67108864", "HOROVOD_CYCLE_TIME=5", "HOROVOD_CACHE_CAPACITY=1024",
                       "HOROVOD_HIERARCHICAL_ALLREDUCE=0", "HOROVOD_START_TIMEOUT=20"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:started\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:started\n")) << r.out;
  const std::string want =
      "launch: warning: HOROVOD_FUSION_THRESHOLD=67108864 is ignored (horovodrun's --fusion-threshold-mb): " +
      find_horovod_flag("--fusion-threshold-mb")->meaning +
      "\nlaunch: warning: HOROVOD_CYCLE_TIME=5 is ignored (horovodrun's --cycle-time-ms): " +
      find_horovod_flag("--cycle-time-ms")->meaning +
      "\nlaunch: warning: HOROVOD_CACHE_CAPACITY=1024 is ignored (horovodrun's --cache-capacity): " +
      find_horovod_flag("--cache-capacity")->meaning + "\n";
  EXPECT_EQ(r.err, want);  // the "off" value and the implemented variable say nothing
  // A refused flag on the command line is still refused: it asks for what baresgd does not have.
  auto flag = run_launch({"-np", "1", "--gloo", "--fusion-threshold-mb", "64", "sh", "-c", "echo started"});
  EXPECT_EQ(flag.status, 2);
  EXPECT_FALSE(contains(flag.out, "started"));
}

// Issue 25 case 6: ./launch without --gloo or --mpi refused ("choose how to start the ranks");
// horovodrun picks one. Now ./launch picks as horovodrun does and says which in one line.
TEST(HorovodFlags, NeitherGlooNorMpiPicksAsHorovodrunAndSaysWhich) {
  auto r = run_launch({"-np", "2", "sh", "-c", "echo comm=$BARESGD_COMM"});
  EXPECT_EQ(r.status, 0) << r.err;
#if BARESGD_HAVE_MPI
  const std::string picked = "mpi";
  EXPECT_EQ(r.err.rfind("launch: neither --gloo nor --mpi: using --mpi, as horovodrun does when MPI is built in "
                        "(mpirun: ",
                        0),
            0u)
      << r.err;
#else
  const std::string picked = "gloo";
  EXPECT_EQ(r.err.rfind("launch: neither --gloo nor --mpi: using --gloo", 0), 0u) << r.err;
#endif
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(contains(r.out, "[0]<stdout>:comm=" + picked + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1]<stdout>:comm=" + picked + "\n")) << r.out;
  // Without mpirun on PATH (only sh there): Gloo.
  const std::string bin = testutil::make_temp_dir("no_mpirun");
  ASSERT_EQ(symlink("/bin/sh", (bin + "/sh").c_str()), 0);
  auto g = testutil::run("env PATH=" + bin + " " + testutil::launch_bin() + " -np 2 sh -c 'echo comm=$BARESGD_COMM'");
  EXPECT_EQ(g.status, 0) << g.err;
#if BARESGD_HAVE_MPI
  EXPECT_EQ(g.err,
            "launch: neither --gloo nor --mpi: using --gloo, as horovodrun does when MPI is not available (mpirun is "
            "not on PATH)\n");
#endif
  EXPECT_TRUE(contains(g.out, "[1]<stdout>:comm=gloo\n")) << g.out;
  testutil::run("rm -rf " + bin);
}

// ---- --config-file -----------------------------------------------------------------------------------

class HorovodConfig : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testutil::make_temp_dir("hvd-config"); }
  void TearDown() override { testutil::run("rm -rf '" + dir_ + "'"); }
  std::string file(const std::string& text) {
    std::string path = dir_ + "/c" + std::to_string(++n_) + ".yaml";
    write_file(path, text);
    return path;
  }
  std::string dir_;
  int n_ = 0;
};

TEST_F(HorovodConfig, KeysBecomeTheirFlags) {
  std::string f = file(
      "# horovodrun's keys\n"
      "controller: gloo\n"
      "params:\n"
      "  hierarchical_allreduce: false\n"
      "  hierarchical_allgather: no\n"
      "autotune:\n"
      "  enabled: false\n"
      "  warmup_samples: 5\n"
      "timeline:\n"
      "  filename: 'horovod timeline.json'\n"
      "  mark_cycles: false\n"
      "stall_check:\n"
      "  enabled: false\n"
      "library_options:\n"
      "  mpi_threads_disable: false\n"
      "  gloo_timeout_seconds: 60   # seconds\n"
      "logging:\n"
      "  level: \"INFO\"\n"
      "  with_timestamp: false\n");
  auto o = parse_launch_options({"-np", "2", "--config-file", f, "true"}, env_of(kNoEnv));
  EXPECT_EQ(o.transport, Transport::kGloo);
  EXPECT_EQ(o.timeline_file, "horovod timeline.json");
  EXPECT_EQ(env_value(o, "HOROVOD_GLOO_TIMEOUT_SECONDS"), "60");
  EXPECT_EQ(env_value(o, "HOROVOD_LOG_LEVEL"), "INFO");
  EXPECT_EQ(env_value(o, "HOROVOD_LOG_HIDE_TIME"), "1");
  EXPECT_EQ(o.command, Strings{"true"});
  // The command line wins, before or after --config-file.
  auto c = parse_launch_options({"-np", "2", "--mpi", "--gloo-timeout-seconds", "5", "--config-file", f,
                                 "--log-with-timestamp", "--timeline-filename", "mine.json", "true"},
                                env_of({{"HOROVOD_GLOO_TIMEOUT_SECONDS", "3"}}));
  EXPECT_EQ(c.transport, Transport::kMpi);
  EXPECT_EQ(env_value(c, "HOROVOD_GLOO_TIMEOUT_SECONDS"), "5");
  EXPECT_EQ(env_value(c, "HOROVOD_LOG_HIDE_TIME"), "0");
  EXPECT_EQ(env_value(c, "HOROVOD_LOG_LEVEL"), "INFO");
  EXPECT_EQ(c.timeline_file, "mine.json");
  // The file wins over the caller's HOROVOD_* (as horovodrun's settings over the environment).
  auto e = parse_launch_options({"-np", "2", "--config-file", f, "true"}, env_of({{"HOROVOD_LOG_LEVEL", "LOUD"}}));
  EXPECT_EQ(env_value(e, "HOROVOD_LOG_LEVEL"), "INFO");
  // Through the binary: the ranks get the file's settings.
  std::string g = file("controller: gloo\nlibrary_options:\n  gloo_timeout_seconds: 61\nlogging:\n  level: ERROR\n");
  auto r = run_launch({"-np", "2", "--config-file", g, "sh", "-c",
                       "echo $BARESGD_RANK:$HOROVOD_GLOO_TIMEOUT_SECONDS:$HOROVOD_LOG_LEVEL"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, ":0:61:ERROR\n")) << r.out;
  EXPECT_TRUE(contains(r.out, ":1:61:ERROR\n")) << r.out;
}

TEST_F(HorovodConfig, BadKeysValuesAndYamlAreOneLineFileLineErrors) {
  struct Case {
    std::string text, line_and_what;
  } cases[] = {
      {"controller: gloo\nparams:\n  bogus: 1\n", ":3: unknown horovodrun config key 'params.bogus'"},
      {"bogus: 1\n", ":1: unknown horovodrun config key 'bogus'"},
      {"library_options:\n  gloo_timeout_seconds: soon\n",
       ":2: library_options.gloo_timeout_seconds 'soon' is not a whole number"},
      {"library_options:\n  gloo_timeout_seconds: 0\n",
       ":2: library_options.gloo_timeout_seconds '0' is not a whole number of seconds from 1 to 100000000"},
      {"library_options:\n  gloo_timeout_seconds: 100000001\n",
       ":2: library_options.gloo_timeout_seconds '100000001' is not a whole number of seconds from 1"},
      {"autotune:\n  warmup_samples: -1\n", ":2: autotune.warmup_samples '-1' must be >= 0"},
      {"autotune:\n  gaussian_process_noise: 1.5\n",
       ":2: autotune.gaussian_process_noise '1.5' is not a number in [0, 1]"},
      {"controller: jsrun\n", ":1: controller 'jsrun' is not gloo or mpi"},
      {"logging:\n  level: LOUD\n", ":2: logging.level 'LOUD' is not one of TRACE"},
      {"logging:\n  with_timestamp: maybe\n", ":2: logging.with_timestamp 'maybe' is not true or false"},
      {"timeline:\n  filename: 'open\n", ":2: unterminated ' string"},
      {"timeline:\n\tfilename: t.json\n", ":2: tab in the indentation"},
      {"timeline\n", ":1: expected 'key: value', got 'timeline'"},
      {"params:\n  a:\n    b: 1\n", ":2: maps nest one level"},
      {"params: [1, 2]\n", ":1: flow lists and maps are not horovodrun config values"},
      {"logging:\n  level: INFO\n  level: DEBUG\n", ":3: duplicate key 'logging.level'"},
      {"logging:\n  level: INFO\n   with_timestamp: true\n", ":3: indentation 3 where 'logging' uses 2"},
      {"params: 3\n", ":1: 'params' holds a map of keys, not a value"},
      {"  level: INFO\n", ":1: indented key 'level' outside a section"},
      {"params:\n  fusion_threshold_mb: 32\n",
       ":2: params.fusion_threshold_mb: --fusion-threshold-mb is not supported: "},
      {"autotune:\n  enabled: true\n", ":2: autotune.enabled: --autotune is not supported: autotune-only"},
      {"logging:\n  hide_timestamp: true\n", ":2: logging.hide_timestamp is not a key horovodrun reads"},
  };
  for (const Case& c : cases) {
    std::string f = file(c.text);
    std::string err = usage_error({"-np", "2", "--config-file", f, "true"});
    EXPECT_TRUE(one_line(err)) << c.text << ": " << err;
    EXPECT_EQ(err.rfind(f + c.line_and_what, 0), 0u) << c.text << "\n  got: " << err;
  }
  // The real binary: exit 2 and the line, nothing started.
  std::string f = file("controller: gloo\nparams:\n  cycle_time_ms: 10\n");
  auto r = run_launch({"-np", "1", "--config-file", f, "sh", "-c", "echo started"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("launch: " + f + ":3: params.cycle_time_ms: --cycle-time-ms is not supported: ", 0), 0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A file that cannot be read is named.
  std::string missing = usage_error({"-np", "2", "--gloo", "--config-file", dir_ + "/none.yaml", "true"});
  EXPECT_EQ(missing, "--config-file " + dir_ + "/none.yaml: No such file or directory");
  std::string d = usage_error({"-np", "2", "--gloo", "--config-file", dir_, "true"});
  EXPECT_EQ(d, "--config-file " + dir_ + ": not a regular file of at most 1 MiB");
  // A FIFO nobody writes is refused at once, not waited on.
  const std::string fifo = dir_ + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(usage_error({"-np", "2", "--gloo", "--config-file", fifo, "true"}),
            "--config-file " + fifo + ": not a regular file of at most 1 MiB");
}

TEST_F(HorovodConfig, HorovodsOwnTestConfigIsReadUpToItsFirstRefusedKey) {
  // Horovod's test/single/data/config.test.yaml layout: every section, quoted and plain scalars.
  std::string f = file(
      "controller: gloo\n\nparams:\n  fusion_threshold_mb: 32\n  cycle_time_ms: 10\n\n"
      "timeline:\n  filename: 'horovod_timeline.json'\n  mark_cycles: true\n");
  std::vector<ConfigEntry> e = parse_config_text(read_file(f), f);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].key, "controller");
  EXPECT_EQ(e[1].key, "params.fusion_threshold_mb");
  EXPECT_EQ(e[1].line, 4);
  EXPECT_EQ(e[3].key, "timeline.filename");
  EXPECT_EQ(e[3].value, "horovod_timeline.json");
  EXPECT_TRUE(e[3].quoted);
  EXPECT_EQ(usage_error({"-np", "2", "--config-file", f, "true"}).rfind(f + ":4: params.fusion_threshold_mb", 0), 0u);
  // CRLF line ends and a leading document marker are read as well.
  std::string crlf = file("---\r\ncontroller: mpi\r\n\r\nlogging:\r\n  level: WARNING\r\n");
  auto o = parse_launch_options({"-np", "2", "--config-file", crlf, "true"}, env_of(kNoEnv));
  EXPECT_EQ(o.transport, Transport::kMpi);
  EXPECT_EQ(env_value(o, "HOROVOD_LOG_LEVEL"), "WARNING");
}

// ---- docs/horovod.md -------------------------------------------------------------------------------

// The table as docs/horovod.md shows it: | names | status | variable | what ./launch does, or why not |.
std::string markdown_row(const HorovodFlag& f) {
  std::string names;
  for (const std::string& n : f.names) names += (names.empty() ? "`" : ", `") + n + "`";
  return "| " + names + " | " + flag_status_name(f.status) + " | " + (f.env.empty() ? "" : "`" + f.env + "`") + " | " +
         f.meaning + " |";
}

TEST(HorovodFlags, DocsTableIsTheCodesTable) {
  const std::string page = read_file(testutil::env_or("BARESGD_SRC", ".") + "/docs/horovod.md");
  ASSERT_FALSE(page.empty()) << "no docs/horovod.md (set BARESGD_SRC)";
  const std::string head = "| horovodrun flag | status | HOROVOD_* variable | what ./launch does, or why not |";
  size_t at = page.find(head);
  ASSERT_NE(at, std::string::npos) << "docs/horovod.md has no horovodrun flag table";
  Strings rows;
  size_t pos = page.find('\n', page.find('\n', at) + 1) + 1;  // past the header and |---| lines
  while (pos < page.size() && page[pos] == '|') {
    size_t nl = page.find('\n', pos);
    rows.push_back(page.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string want;
  for (const HorovodFlag& f : horovod_flags()) want += markdown_row(f) + "\n";
  std::string got;
  for (const std::string& r : rows) got += r + "\n";
  EXPECT_EQ(got, want) << "docs/horovod.md's horovodrun table differs from launcher/horovod_flags.cc; its rows should "
                          "be:\n"
                       << want;
}

}  // namespace
