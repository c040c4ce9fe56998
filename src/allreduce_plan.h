// allreduce_plan: our allreduce algorithms in closed form, for the trace and the tests to name and
// check what each step moves. Rank r's steps of --allreduce ring, halving-doubling and direct over
// W ranks and N elements written from the formulas (not from running them): peer, chunk, float
// range, phase and its step count; the layers of the flat parameter buffer a range covers; and
// the cost of one call: messages and bytes per rank with the formula, and the alpha-beta model's
// time. Pure functions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/allreduce.h"

// One step of rank r as the closed form says it goes (the fields of comm/allreduce.h's
// AllreduceStep; -1 / empty range on an idle side).
struct PlannedStep {
  int step = 0;
  std::string phase;    // "reduce-scatter", "allgather", "fold", "unfold", "exchange"
  int phase_step = 0;   // 1-based within the phase
  int phase_steps = 0;  // steps of the phase
  int send_to = -1, recv_from = -1;
  int parts = 0, send_chunk = -1, recv_chunk = -1;
  size_t send_lo = 0, send_hi = 0, recv_lo = 0, recv_hi = 0;  // elements [lo, hi)
};

// Every step rank r takes in one call of algorithm a (kRing, kHalvingDoubling or kDirect; others:
// empty) over w ranks and n elements. A rank that sits a step out (halving-doubling's extra ranks
// during the butterfly) has no entry for it.
//   ring: step s < W-1 (reduce-scatter): send chunk (r-s) mod W to r+1, receive (r-s-1) mod W from
//     r-1; step W-1+s (allgather): send (r+1-s) mod W, receive (r-s) mod W. Chunk c: elements
//     [c*(N/W) + min(c, N%W), ...) of N/W (+1 for the first N%W chunks). parts = W.
//   halving-doubling, P = largest power of two <= W: fold (W > P) P+i -> i; at level j (distance
//     2^j) rank r < P pairs with r ^ 2^j; the vector is in 2^(j+1) pieces, piece k splitting the
//     region k/2 of the level before at its middle; r keeps piece 2k + bit_j(r) of its region k,
//     sends the other; allgather: the levels reversed, sending the kept piece; unfold i -> P+i.
//   direct: step k-1 sends the whole vector to r+k and receives r-k's (parts 1).
//   adasum (--use-adasum, W a power of two): halving-doubling's pieces, combined, not summed.
std::vector<PlannedStep> planned_steps(AllreduceAlgorithm a, int w, int r, size_t n);

// The phase position of step `step` in a call of a over w ranks: "reduce-scatter 1/3". "" if
// the step is none of the algorithm's.
std::string phase_position(AllreduceAlgorithm a, int w, int step);

// The parameter tensors (Net::kParams names joined by "+") that elements [lo, hi) of the flat
// parameter buffer cover: "fc1.weight" or "conv2.bias+fc1.weight". "" for an empty range.
std::string layers_covering(size_t lo, size_t hi);

// One call's cost on rank r, in closed form: what the trace's call slice states beside what it
// measured.
struct AllreduceCost {
  int messages = 0;                 // messages rank r sends
  uint64_t sent = 0, received = 0;  // bytes (the exact count of the formula's chunks)
  std::string formula;              // "2(W-1)/W x N = 2x3/4 x 87360 B = 131040 B"
  std::string model;                // "2(W-1) alpha + 2(W-1)/W N beta"
  double predicted_us = 0;          // the model at alpha_us, beta_us_per_byte
};

// n elements of elem_bytes each; alpha in microseconds per message, beta in microseconds per byte.
AllreduceCost allreduce_cost(AllreduceAlgorithm a, int w, int r, size_t n, size_t elem_bytes, double alpha_us,
                             double beta_us_per_byte);
