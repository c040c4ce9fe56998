// fuzz_slurm_store_plan: libFuzzer target for the plan of srun's Gloo rendezvous
// (comm/slurm_store_plan.h: rank 0's node from SLURM_STEP_NODELIST and
// SLURM_STEP_TASKS_PER_NODE, the job step's port sequence) and the MUNGE payloads.
//
// Input: byte 0 is the task count (1..256); the rest is split at NULs into SLURM_JOB_ID,
// SLURM_STEP_ID, SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE.
// Contract checked: a plan is made or refused with std::invalid_argument and one line, never
// anything else; a plan's rank-0 node is the first node of the expanded list and holds task 0;
// one_node says whether the list has one node; its ports are kStoreMungePortTries distinct ports in
// [47000, 49000); its payload names the job and step; client and server payloads of one connection
// never coincide.
//
// Build: make fuzz (build-fuzz/fuzz_slurm_store_plan); run: .ci/fuzz.sh
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/slurm_hostlist.h"
#include "comm/slurm_store_plan.h"
#include "comm/store_munge_check.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int tasks = 1 + data[0];
  std::vector<std::string> parts(4);
  size_t k = 0;
  for (size_t i = 1; i < size && size < 4096; ++i) {
    if (data[i] == 0 && k < 3)
      ++k;
    else
      parts[k].push_back(static_cast<char>(data[i]));
  }
  SlurmStorePlan plan;
  try {
    plan = plan_slurm_store(parts[0], parts[1], parts[2], parts[3], tasks);
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    FUZZ_CHECK(!msg.empty() && msg.find('\n') == std::string::npos);
    return 0;
  }
  const std::vector<std::string> nodes = expand_slurm_hostlist(parts[2], "SLURM_STEP_NODELIST");
  const std::vector<int> counts = expand_slurm_tasks_per_node(parts[3], "SLURM_STEP_TASKS_PER_NODE");
  FUZZ_CHECK(!nodes.empty() && plan.rank0_node == nodes[0]);
  FUZZ_CHECK(plan.one_node == (nodes.size() == 1));
  FUZZ_CHECK(node_of_task(nodes, counts, 0) == nodes[0] && node_of_task(nodes, counts, tasks).empty());
  FUZZ_CHECK(plan.ports.size() == static_cast<size_t>(kStoreMungePortTries));
  FUZZ_CHECK(std::set<int>(plan.ports.begin(), plan.ports.end()).size() == plan.ports.size());
  for (int p : plan.ports) FUZZ_CHECK(p >= kStoreMungePortBase && p < kStoreMungePortBase + kStoreMungePortSpan);
  FUZZ_CHECK(plan.step_payload == "baresgd-store job=" + parts[0] + " step=" + parts[1]);
  FUZZ_CHECK(munge_client_payload(plan.step_payload, "a", "b") != munge_server_payload(plan.step_payload, "b"));
  return 0;
}
