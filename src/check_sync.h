// check_sync: --check-sync N, the proof that data-parallel SGD keeps every rank's parameters
// bit-identical: per-layer CRC-32s of the parameters compared across ranks, and the message that
// names the first layer and the ranks that disagree. Also applies the test hook that breaks it on
// purpose (BARESGD_TEST_PERTURB, src/perturb_spec.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/perturb_spec.h"

// CRC-32 of each layer's float32 parameters (Net::kParams order); params: Net::kNumParams floats.
std::vector<uint32_t> layer_checksums(const float* params);

// crcs: world_size * Net::kNumTensors, rank-major. "" when every rank matches rank 0; else
// "--check-sync: parameters diverged at step S: fc1.weight differs on rank 2 (crc 1a2b3c4d) from
// rank 0 (crc 5e6f7a8b)" for the first layer that differs (every disagreeing rank listed).
std::string divergence_message(uint64_t step, const std::vector<uint32_t>& crcs, int world_size);

// The one line --check-sync prints when every check passed: "--check-sync: parameters identical
// on all 4 ranks at every check (3 checks, steps 0 to 20)".
std::string sync_agreement_line(uint64_t checks, uint64_t last_step, int world_size);

// True when --check-sync N checks after 0-based optimizer step `step`: steps 0, N, 2N, ...
inline bool check_sync_due(long long every, uint64_t step) { return every > 0 && step % uint64_t(every) == 0; }

// The BARESGD_TEST_PERTURB hook (src/perturb_spec.h): applies spec to params when this rank and
// step match it. Throws std::invalid_argument when spec names no layer of the model.
void maybe_perturb(const PerturbSpec& spec, int rank, uint64_t step, float* params);
// Throws std::invalid_argument unless spec.layer is one of Net::kParams (checked at start-up).
void check_perturb_layer(const PerturbSpec& spec);
