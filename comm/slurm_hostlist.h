// slurm_hostlist: pure parsers of Slurm's compressed lists, as Slurm writes them into a job's
// environment — the host list of SLURM_JOB_NODELIST ("hpc[01-04,07]") and the per-node task
// counts of SLURM_TASKS_PER_NODE ("2(x3),1"). Errors are thrown as SlurmListError with one line
// naming the variable, its value and the character (1-based) or part that is wrong.
//
// Host lists follow Slurm's src/common/hostlist.c (one-dimensional clusters):
//   - items are separated by ',' outside brackets; inside "[...]" ',' separates ranges;
//   - a range is "N" or "LO-HI" (LO <= HI, decimal); every number of a range is zero-padded to
//     the width of LO as written ("n[08-10]" -> n08 n09 n10, "n[8-10]" -> n8 n9 n10);
//   - an item may hold several bracket groups and text after the last one
//     ("rack[1-2]-n[01-02]" -> rack1-n01 rack1-n02 rack2-n01 rack2-n02: the leftmost group
//     varies slowest, as Slurm expands them; "n[1-2]x" -> n1x n2x).
// Stricter than Slurm where Slurm never writes such a list: whitespace is not a separator, empty
// items ("a,,b") and empty ranges are errors, brackets must balance and not nest, and host names
// are made of letters, digits, '-', '_' and '.' (so they can reach ssh's command line) and do not
// start with '-'. Duplicates are kept (see slurm_allocation.h, which refuses them).
// Caps, so that no input can ask for unbounded memory: at most kSlurmMaxHosts hosts (Slurm's own
// MAX_SLURM_NODES), host names of at most kSlurmMaxHostName characters, numbers of at most 18
// digits.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

struct SlurmListError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr size_t kSlurmMaxHosts = 65536;
constexpr size_t kSlurmMaxHostName = 255;
constexpr int kSlurmMaxTasksPerNode = 65536;

// "hpc[01-02],gpu" -> {"hpc01", "hpc02", "gpu"}. what names the input in errors (the variable).
std::vector<std::string> expand_slurm_hostlist(const std::string& text, const std::string& what = "SLURM_JOB_NODELIST");

// "2(x3),1" -> {2, 2, 2, 1}: counts >= 1 (at most kSlurmMaxTasksPerNode), repetitions >= 1, at
// most kSlurmMaxHosts nodes in all.
std::vector<int> expand_slurm_tasks_per_node(const std::string& text, const std::string& what = "SLURM_TASKS_PER_NODE");

// The variable and its value as errors show them: NAME='value' (a value longer than 200
// characters is cut, with "..."; bytes outside printable ASCII shown as \xNN, so one line).
std::string slurm_quoted(const std::string& what, const std::string& text);
