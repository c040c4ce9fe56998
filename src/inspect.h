// inspect: --inspect STEPS, the per-layer view of one optimizer step on every rank: each rank's
// local gradient norm, its cosine to the averaged gradient, the averaged gradient's norm, the
// update/parameter norm ratio, the bytes the rank sent and received, and a CRC-32 of its
// parameters; rank 0 prints them as one table (layers as rows, ranks as column groups). With
// --use-adasum also the combination coefficients of every level. Pure functions; the gathering
// is in run_records.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/allreduce_bytes.h"
#include "src/net.h"

// One rank's view of one layer at an inspected step. Fixed size: gathered as raw bytes.
struct LayerStats {
  double local_grad_norm;               // |g_r|: this rank's gradient before averaging
  double cosine_to_average;             // g_r . g / (|g_r| |g|), 0 when either is zero
  double average_grad_norm;             // |g|: the averaged gradient the optimizer used
  double update_ratio;                  // |p_after - p_before| / |p_before| (0 when |p_before| = 0)
  uint64_t bytes_sent, bytes_received;  // this layer's share of the step's allreduce
  uint32_t param_checksum;              // CRC-32 of the layer's float32 parameters after the step
  uint32_t unused = 0;
};

// Adasum's combination coefficients at one level for one layer tensor on one rank:
// the kept half becomes a_coef * own + b_coef * peer's. Mirrors the AdasumCoefficients that
// comm/gradient_averaging.h's adasum_trace fills (same fields), so a list of those converts
// one to one.
struct AdasumLevelCoef {
  int level, segment;
  double a_coef, b_coef;
};

// Per-layer stats of this rank; every array holds Net::kNumParams floats (flat layout).
std::vector<LayerStats> layer_stats(const float* local_grad, const float* avg_grad, const float* params_before,
                                    const float* params_after, const AllreduceBytes& bytes);

// What the table's header line says about the step.
struct InspectHeader {
  uint64_t step;  // 0-based optimizer step
  int epoch;
  uint64_t batch;
  int world_size;
  std::string backend, algorithm;
  AllreduceBytes bytes;  // its source and how (the counts are per layer in the stats)
};

// The table: a header line naming the step, column heads, one row per layer (Net::kParams order),
// one column group per rank, and a last line saying whether the checksums agree and the local
// gradients differ. stats: world_size * Net::kNumTensors entries, rank-major.
std::string inspect_table(const InspectHeader& h, const std::vector<LayerStats>& stats);

// The coefficient lines of every rank (coefs[r] = rank r's list, may be empty): one line per
// (rank, level) with a and b per layer. "" when every list is empty.
std::string adasum_lines(uint64_t step, const std::vector<std::vector<AdasumLevelCoef>>& coefs);

// --inspect-dump DIR (tests): DIR/step<S>-rank<R>-local.f32 and DIR/step<S>-rank<R>-average.f32,
// Net::kNumParams raw float32 each. Throws std::runtime_error naming the file.
void dump_inspect_gradients(const std::string& dir, uint64_t step, int rank, const float* local_grad,
                            const float* avg_grad);
// Throws std::runtime_error("--inspect-dump DIR: ...") unless DIR is a writable directory.
void check_dump_dir(const std::string& dir);
