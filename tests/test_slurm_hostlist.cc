// test_slurm_hostlist: Slurm's compressed lists (comm/slurm_hostlist.h) — host ranges,
// padding, several bracket groups, tasks-per-node forms and every refused input with its exact
// message — the allocation read from a fake environment (launcher/slurm_allocation.h) and
// ./launch's choice of hosts and -np from flags and environment (launcher/host_choice.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launcher/host_choice.h"
#include "launcher/options.h"
#include "launcher/slurm_allocation.h"
#include "comm/slurm_hostlist.h"

namespace {

using Names = std::vector<std::string>;

std::string hostlist_error(const std::string& text) {
  try {
    expand_slurm_hostlist(text);
  } catch (const SlurmListError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string tasks_error(const std::string& text) {
  try {
    expand_slurm_tasks_per_node(text);
  } catch (const SlurmListError& e) {
    return e.what();
  }
  return "(accepted)";
}

EnvMap allocation(const std::string& nodes, const std::string& tasks) {
  return {{"SLURM_JOB_ID", "1234"}, {"SLURM_JOB_NODELIST", nodes}, {"SLURM_TASKS_PER_NODE", tasks}};
}

std::string allocation_error(const EnvMap& env) {
  try {
    read_slurm_allocation(env);
  } catch (const SlurmListError& e) {
    return e.what();
  }
  return "(accepted)";
}

LaunchOptions opts(const std::vector<std::string>& args) { return parse_launch_options(args); }

std::string choice_error(const std::vector<std::string>& args, const EnvMap& env) {
  try {
    choose_hosts(opts(args), env);
  } catch (const HostError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(SlurmHostlist, PlainNamesAndRanges) {
  EXPECT_EQ(expand_slurm_hostlist("gpu"), (Names{"gpu"}));
  EXPECT_EQ(expand_slurm_hostlist("a1,b[2-3]"), (Names{"a1", "b2", "b3"}));
  EXPECT_EQ(expand_slurm_hostlist("hpc[01-04,07]"), (Names{"hpc01", "hpc02", "hpc03", "hpc04", "hpc07"}));
  EXPECT_EQ(expand_slurm_hostlist("n[5]"), (Names{"n5"}));
  EXPECT_EQ(expand_slurm_hostlist("n[3,1,2]"), (Names{"n3", "n1", "n2"}));  // order kept, as Slurm writes it
  EXPECT_EQ(expand_slurm_hostlist("node-1.cluster_a"), (Names{"node-1.cluster_a"}));
  EXPECT_EQ(expand_slurm_hostlist("[1-2]"), (Names{"1", "2"}));
  EXPECT_EQ(expand_slurm_hostlist("a,a"), (Names{"a", "a"}));  // kept; the allocation refuses it
}

TEST(SlurmHostlist, PaddingIsTheWidthOfTheLowerBound) {
  EXPECT_EQ(expand_slurm_hostlist("n[08-11]"), (Names{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(expand_slurm_hostlist("n[8-11]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_slurm_hostlist("n[001-3]"), (Names{"n001", "n002", "n003"}));
  EXPECT_EQ(expand_slurm_hostlist("n[98-101]"), (Names{"n98", "n99", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_hostlist("n[099-101]"), (Names{"n099", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_hostlist("n[0]"), (Names{"n0"}));
  EXPECT_EQ(expand_slurm_hostlist("n[00,7]"), (Names{"n00", "n7"}));  // per range
}

TEST(SlurmHostlist, SeveralGroupsAndSuffixes) {
  EXPECT_EQ(expand_slurm_hostlist("n[001-003]x,gpu"), (Names{"n001x", "n002x", "n003x", "gpu"}));
  EXPECT_EQ(expand_slurm_hostlist("rack[1-2]-n[01-02]"), (Names{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  EXPECT_EQ(expand_slurm_hostlist("r[1,3]c[1-2]n[9-10].ib"),
            (Names{"r1c1n9.ib", "r1c1n10.ib", "r1c2n9.ib", "r1c2n10.ib", "r3c1n9.ib", "r3c1n10.ib", "r3c2n9.ib",
                   "r3c2n10.ib"}));
  EXPECT_EQ(expand_slurm_hostlist("a[1-2],b,c[7,9-10]d"), (Names{"a1", "a2", "b", "c7d", "c9d", "c10d"}));
  EXPECT_EQ(expand_slurm_hostlist("[1-2][1-2]"), (Names{"11", "12", "21", "22"}));
}

TEST(SlurmHostlist, CapsTheExpansion) {
  EXPECT_EQ(expand_slurm_hostlist("n[1-65536]").size(), 65536u);
  EXPECT_EQ(expand_slurm_hostlist("n[1-65536]").back(), "n65536");
  EXPECT_EQ(hostlist_error("n[1-65537]"),
            "SLURM_JOB_NODELIST='n[1-65537]': range '1-65537' at character 3 expands to more than 65536 hosts");
  EXPECT_EQ(
      hostlist_error("a[1-256]b[1-257]"),
      "SLURM_JOB_NODELIST='a[1-256]b[1-257]': 'a[1-256]b[1-257]' at character 1 expands to more than 65536 hosts");
  EXPECT_EQ(hostlist_error("a[1-40000],b[1-40000]"),
            "SLURM_JOB_NODELIST='a[1-40000],b[1-40000]': expands to more than 65536 hosts");
  EXPECT_EQ(hostlist_error("n[0-999999999999999999]"),
            "SLURM_JOB_NODELIST='n[0-999999999999999999]': range '0-999999999999999999' at character 3 expands to "
            "more than 65536 hosts");
  EXPECT_EQ(hostlist_error("n[1-9999999999999999999]"),
            "SLURM_JOB_NODELIST='n[1-9999999999999999999]': range '1-9999999999999999999' at character 3 has a "
            "number of more than 18 digits");
  const std::string long_name(253, 'a');
  EXPECT_EQ(expand_slurm_hostlist(long_name + "[10-99]").size(), 90u);  // 255 characters each
  EXPECT_EQ(hostlist_error(long_name + "[100-101]"), "SLURM_JOB_NODELIST='" + std::string(200, 'a') +
                                                         "...': host names from '" + long_name +
                                                         "[100-101]' at character 1 are longer than 255 characters");
}

TEST(SlurmHostlist, RefusesBadListsWithExactMessages) {
  struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"", "empty host list"},
      {"hpc[01-04", "unbalanced '[' at character 4 (no ']' after it)"},
      {"hpc01-04]", "unbalanced ']' at character 9 (no '[' before it)"},
      {"a[1-2]]", "unbalanced ']' at character 7 (no '[' before it)"},
      {"a[1[2]]", "nested '[' at character 4 (the '[' at character 2 is not closed)"},
      {"a[5-3]", "reversed range '5-3' at character 3 (LO must be <= HI)"},
      {"a,,b", "empty host name at character 3"},
      {",a", "empty host name at character 1"},
      {"a,", "empty host name at character 2"},
      {"a[]", "empty range at character 2 (inside '[...]')"},
      {"a[1,]", "empty range at character 4 (inside '[...]')"},
      {"a[,1]", "empty range at character 2 (inside '[...]')"},
      {"a[x]", "range 'x' at character 3 is not a number or LO-HI"},
      {"a[1-x]", "range '1-x' at character 3 is not a number or LO-HI"},
      {"a[1-]", "range '1-' at character 3 is not a number or LO-HI"},
      {"a[-1]", "range '-1' at character 3 is not a number or LO-HI"},
      {"a[1-2-3]", "range '1-2-3' at character 3 is not a number or LO-HI"},
      {"a[+1]", "range '+1' at character 3 is not a number or LO-HI"},
      {"a[ 1]", "range ' 1' at character 3 is not a number or LO-HI"},
      {"a b", "character ' ' at character 2 is not allowed in a host name (letters, digits, '-', '_', '.')"},
      {"a:2", "character ':' at character 2 is not allowed in a host name (letters, digits, '-', '_', '.')"},
      {"n[1-2]$x", "character '$' at character 7 is not allowed in a host name (letters, digits, '-', '_', '.')"},
      {"-oProxyCommand", "host name '-oProxyCommand' at character 1 starts with '-'"},
      {"a,-n[1-2]", "host name '-n[1-2]' at character 3 starts with '-'"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(hostlist_error(c.text), std::string("SLURM_JOB_NODELIST='") + c.text + "': " + c.why) << c.text;
  EXPECT_EQ(hostlist_error("a\nb"),
            "SLURM_JOB_NODELIST='a\\x0ab': character '\\x0a' at character 2 is not allowed in a "
            "host name (letters, digits, '-', '_', '.')");
  EXPECT_EQ(tasks_error("1\t"),
            "SLURM_TASKS_PER_NODE='1\\x09': '1\\x09' at character 1 is not COUNT or COUNT(xREPEAT)");
}

TEST(SlurmTasksPerNode, Forms) {
  EXPECT_EQ(expand_slurm_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_slurm_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand_slurm_tasks_per_node("1(x1)"), (std::vector<int>{1}));
  EXPECT_EQ(expand_slurm_tasks_per_node("3,2(x2),5"), (std::vector<int>{3, 2, 2, 5}));
  EXPECT_EQ(expand_slurm_tasks_per_node("1(x65536)").size(), 65536u);
  EXPECT_EQ(expand_slurm_tasks_per_node("65536"), (std::vector<int>{65536}));
}

TEST(SlurmTasksPerNode, RefusesBadListsWithExactMessages) {
  struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"", "empty list"},
      {"2,,1", "empty entry at character 3"},
      {"2,", "empty entry at character 2"},
      {"x", "'x' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"2(x3", "'2(x3' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"1,2(3)", "'2(3)' at character 3 is not COUNT or COUNT(xREPEAT)"},
      {"2(x)", "'2(x)' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"(x2)", "'(x2)' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"-1", "'-1' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"2(x3)1", "'2(x3)1' at character 1 is not COUNT or COUNT(xREPEAT)"},
      {"0", "a count of 0 tasks at character 1"},
      {"2,0(x2)", "a count of 0 tasks at character 3"},
      {"2(x0)", "a repetition of (x0) at character 2"},
      {"65537", "a count of 65537 tasks at character 1 is more than 65536"},
      {"1(x65537)", "lists more than 65536 nodes"},
      {"1(x60000),1(x6000)", "lists more than 65536 nodes"},
      {"1(x9999999999999999999)", "'1(x9999999999999999999)' at character 1 is not COUNT or COUNT(xREPEAT)"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(tasks_error(c.text), std::string("SLURM_TASKS_PER_NODE='") + c.text + "': " + c.why) << c.text;
}

TEST(SlurmAllocation, ReadsHostsSlotsAndTasks) {
  EnvMap env = allocation("hpc[01-02],gpu", "2(x2),1");
  EXPECT_FALSE(in_slurm_allocation({}));
  EXPECT_FALSE(in_slurm_allocation({{"SLURM_JOB_ID", "1"}}));
  EXPECT_FALSE(in_slurm_allocation({{"SLURM_JOB_NODELIST", "a"}}));
  ASSERT_TRUE(in_slurm_allocation(env));
  SlurmAllocation a = read_slurm_allocation(env);
  EXPECT_EQ(a.job_id, "1234");
  ASSERT_EQ(a.hosts.size(), 3u);
  EXPECT_EQ(a.hosts[0].name, "hpc01");
  EXPECT_EQ(a.hosts[0].slots, 2);
  EXPECT_EQ(a.hosts[2].name, "gpu");
  EXPECT_EQ(a.hosts[2].slots, 1);
  EXPECT_EQ(a.slots, 5);
  EXPECT_EQ(a.ntasks, 5);
  EXPECT_EQ(a.summary(), "hpc[01-02],gpu: 2(x2),1");
  env["SLURM_NTASKS"] = "3";
  EXPECT_EQ(read_slurm_allocation(env).ntasks, 3);
}

TEST(SlurmAllocation, RefusesInconsistentEnvironments) {
  EXPECT_EQ(allocation_error(allocation("hpc[01-04]", "2(x3)")),
            "SLURM_TASKS_PER_NODE='2(x3)' lists 3 nodes but SLURM_JOB_NODELIST='hpc[01-04]' has 4");
  EXPECT_EQ(allocation_error(allocation("a", "1,1")),
            "SLURM_TASKS_PER_NODE='1,1' lists 2 nodes but SLURM_JOB_NODELIST='a' has 1");
  EXPECT_EQ(allocation_error(allocation("n[1-2],n2", "1(x3)")),
            "SLURM_JOB_NODELIST='n[1-2],n2': host 'n2' is listed twice");
  EXPECT_EQ(allocation_error(allocation("n[1-2]", "65536,1")),
            "SLURM_TASKS_PER_NODE='65536,1': 65537 tasks in all, more than launch supports (65536)");
  EXPECT_EQ(allocation_error({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "a"}}),
            "SLURM_JOB_NODELIST is set but SLURM_TASKS_PER_NODE is not: cannot tell how many tasks each node holds "
            "(pass -H or --hostfile)");
  EXPECT_EQ(allocation_error(allocation("a[", "1")),
            "SLURM_JOB_NODELIST='a[': unbalanced '[' at character 2 (no ']' after it)");
  EXPECT_EQ(allocation_error(allocation("a", "0")), "SLURM_TASKS_PER_NODE='0': a count of 0 tasks at character 1");
  EnvMap env = allocation("a[1-2]", "2(x2)");
  env["SLURM_NTASKS"] = "5";
  EXPECT_EQ(allocation_error(env), "SLURM_NTASKS='5': more than the 4 tasks of SLURM_TASKS_PER_NODE='2(x2)'");
  env["SLURM_NTASKS"] = "0";
  EXPECT_EQ(allocation_error(env), "SLURM_NTASKS='0': must be >= 1");
  env["SLURM_NTASKS"] = "four";
  EXPECT_EQ(allocation_error(env), "SLURM_NTASKS='four': not a whole number");
  env["SLURM_NTASKS"] = "";
  EXPECT_EQ(allocation_error(env), "SLURM_NTASKS='': not a whole number");
}

TEST(SlurmAllocation, EnvMapFromEnvironStrings) {
  EnvMap m = env_map({"A=1", "B=x=y", "C=", "junk"});
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m["B"], "x=y");
  EXPECT_EQ(m["C"], "");
}

TEST(LaunchHostChoiceOptions, AllocationGivesHostsSlotsAndNp) {
  EnvMap env = allocation("hpc[01-02]", "2(x2)");
  HostChoice c = choose_hosts(opts({"--gloo", "x"}), env);
  EXPECT_EQ(c.source, HostSource::kSlurm);
  EXPECT_EQ(c.np, 4);  // the sum of SLURM_TASKS_PER_NODE
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.hosts[1].name, "hpc02");
  EXPECT_EQ(c.hosts[1].slots, 2);
  EXPECT_EQ(c.described(), "the Slurm allocation 1234 (hpc[01-02]: 2(x2))");
  env["SLURM_NTASKS"] = "3";
  EXPECT_EQ(choose_hosts(opts({"--gloo", "x"}), env).np, 3);              // SLURM_NTASKS
  EXPECT_EQ(choose_hosts(opts({"-np", "2", "--gloo", "x"}), env).np, 2);  // -np wins
  EXPECT_EQ(choose_hosts(opts({"-np", "4", "--gloo", "x"}), env).np, 4);  // up to the slots
  EXPECT_EQ(choice_error({"-np", "8", "--gloo", "x"}, allocation("hpc[01-02]", "2(x2)")),
            "-np 8 but the Slurm allocation 1234 holds 4 tasks (hpc[01-02]: 2(x2))");
  EXPECT_EQ(choice_error({"-np", "2", "--gloo", "x"}, allocation("hpc01", "1")),
            "-np 2 but the Slurm allocation 1234 holds 1 task (hpc01: 1)");
  EXPECT_EQ(
      choice_error({"--gloo", "x"}, allocation("hpc[01-02]", "2(x3)")),
      "in a Slurm allocation: SLURM_TASKS_PER_NODE='2(x3)' lists 3 nodes but SLURM_JOB_NODELIST='hpc[01-02]' has 2");
}

TEST(LaunchHostChoiceOptions, FlagsWinAndNpIsRequiredOutsideAnAllocation) {
  EnvMap env = allocation("hpc[01-02]", "2(x2)");
  HostChoice h = choose_hosts(opts({"-np", "3", "--gloo", "-H", "a:3", "x"}), env);
  EXPECT_EQ(h.source, HostSource::kHostsFlag);
  ASSERT_EQ(h.hosts.size(), 1u);
  EXPECT_EQ(h.hosts[0].name, "a");
  EXPECT_EQ(h.described(), "");
  HostChoice f = choose_hosts(opts({"-np", "3", "--gloo", "--hostfile", "hf", "x"}), env);
  EXPECT_EQ(f.source, HostSource::kHostfile);
  EXPECT_TRUE(f.hosts.empty());
  EXPECT_EQ(choice_error({"--gloo", "-H", "a:3", "x"}, env), "-np N is required (the number of ranks)");
  EXPECT_EQ(choice_error({"--gloo", "x"}, {}), "-np N is required (the number of ranks)");
  EXPECT_EQ(choice_error({"--gloo", "x"}, {{"SLURM_JOB_ID", "5"}}), "-np N is required (the number of ranks)");
  HostChoice l = choose_hosts(opts({"-np", "2", "--gloo", "x"}), {});
  EXPECT_EQ(l.source, HostSource::kLocalhost);
  ASSERT_EQ(l.hosts.size(), 1u);
  EXPECT_EQ(l.hosts[0].name, "localhost");
  EXPECT_EQ(l.hosts[0].slots, 2);
  EXPECT_FALSE(opts({"--gloo", "x"}).np_given);
  EXPECT_TRUE(opts({"-np", "1", "--gloo", "x"}).np_given);
}
