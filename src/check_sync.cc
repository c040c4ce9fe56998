// check_sync: per-layer parameter checksums, the divergence message, and the perturbation hook.
#include "src/check_sync.h"

#include <cstdio>
#include <stdexcept>

#include "src/crc32.h"
#include "src/net.h"

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

int layer_index(const std::string& name) {
  for (int l = 0; l < Net::kNumTensors; ++l)
    if (name == Net::kParams[l].name) return l;
  throw std::invalid_argument("BARESGD_TEST_PERTURB: layer=" + name + " is not a layer (conv1.weight ... fc2.bias)");
}

}  // namespace

std::vector<uint32_t> layer_checksums(const float* params) {
  std::vector<uint32_t> out;
  for (const ParamView& p : Net::kParams) out.push_back(crc32_of(params + p.offset, p.count * sizeof(float)));
  return out;
}

std::string divergence_message(uint64_t step, const std::vector<uint32_t>& crcs, int world_size) {
  const int L = Net::kNumTensors;
  for (int l = 0; l < L; ++l) {
    std::string ranks;
    int differing = 0;
    for (int r = 1; r < world_size; ++r) {
      const uint32_t c = crcs[size_t(r) * L + l];
      if (c == crcs[l]) continue;
      ranks += std::string(differing++ ? ", " : "") + std::to_string(r) + " (crc " + hex(c) + ")";
    }
    if (differing == 0) continue;
    return "--check-sync: parameters diverged at step " + std::to_string(step) + ": " + Net::kParams[l].name +
           " differs on rank" + (differing > 1 ? "s " : " ") + ranks + " from rank 0 (crc " + hex(crcs[l]) + ")";
  }
  return "";
}

std::string sync_agreement_line(uint64_t checks, uint64_t last_step, int world_size) {
  return "--check-sync: parameters identical on all " + std::to_string(world_size) +
         (world_size == 1 ? " rank" : " ranks") + " at every check (" + std::to_string(checks) +
         (checks == 1 ? " check, step 0)" : " checks, steps 0 to " + std::to_string(last_step) + ")");
}

void check_perturb_layer(const PerturbSpec& spec) { (void)layer_index(spec.layer); }

void maybe_perturb(const PerturbSpec& spec, int rank, uint64_t step, float* params) {
  if (spec.active && spec.rank == rank && spec.step == step)
    params[Net::kParams[layer_index(spec.layer)].offset] += 1e-3f;
}
