// allreduce_plan: the closed form of our allreduce algorithms' steps and costs (see the header).
#include "src/allreduce_plan.h"

#include <algorithm>
#include <cstdio>

#include "src/net.h"

namespace {

int mod(int x, int w) { return ((x % w) + w) % w; }

int largest_power_of_two(int w) {
  int p = 1;
  while (p * 2 <= w) p *= 2;
  return p;
}

int log2_of(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

// Ring chunk c of n over w: [c*(n/w) + min(c, n%w), + n/w (+1 for the first n%w)).
void ring_chunk(size_t n, int w, int c, size_t* lo, size_t* hi) {
  const size_t base = n / size_t(w), extra = n % size_t(w), cc = size_t(c);
  *lo = cc * base + std::min(cc, extra);
  *hi = *lo + base + (cc < extra ? 1 : 0);
}

// Halving-doubling piece k of 2^depth: the bits of k, most significant first, choose the upper
// (1) or lower (0) half of [0, n) at each level, each cut at lo + (hi-lo)/2.
void halving_piece(size_t n, int depth, int k, size_t* lo, size_t* hi) {
  *lo = 0;
  *hi = n;
  for (int level = depth - 1; level >= 0; --level) {
    const size_t mid = *lo + (*hi - *lo) / 2;
    if ((k >> level) & 1)
      *lo = mid;
    else
      *hi = mid;
  }
}

PlannedStep planned(int step, const char* phase, int phase_step, int phase_steps, int parts) {
  PlannedStep p;
  p.step = step;
  p.phase = phase;
  p.phase_step = phase_step;
  p.phase_steps = phase_steps;
  p.parts = parts;
  return p;
}

std::vector<PlannedStep> ring_plan(int w, int r, size_t n) {
  std::vector<PlannedStep> out;
  for (int s = 0; s < 2 * (w - 1); ++s) {
    const bool scatter = s < w - 1;
    const int k = scatter ? s : s - (w - 1);
    PlannedStep p = planned(s, scatter ? "reduce-scatter" : "allgather", k + 1, w - 1, w);
    p.send_to = mod(r + 1, w);
    p.recv_from = mod(r - 1, w);
    p.send_chunk = scatter ? mod(r - k, w) : mod(r + 1 - k, w);
    p.recv_chunk = scatter ? mod(r - k - 1, w) : mod(r - k, w);
    ring_chunk(n, w, p.send_chunk, &p.send_lo, &p.send_hi);
    ring_chunk(n, w, p.recv_chunk, &p.recv_lo, &p.recv_hi);
    out.push_back(p);
  }
  return out;
}

std::vector<PlannedStep> halving_doubling_plan(int w, int r, size_t n) {
  std::vector<PlannedStep> out;
  const int p = largest_power_of_two(w), levels = log2_of(p);
  const bool folds = w > p;
  const int first = folds ? 1 : 0;
  auto whole = [n](PlannedStep* s, bool send, bool recv) {
    if (send) {
      s->send_chunk = 0;
      s->send_hi = n;
    }
    if (recv) {
      s->recv_chunk = 0;
      s->recv_hi = n;
    }
  };
  if (folds && (r >= p || r < w - p)) {
    PlannedStep s = planned(0, "fold", 1, 1, 1);
    if (r >= p) s.send_to = r - p;
    if (r < w - p) s.recv_from = r + p;
    whole(&s, r >= p, r < w - p);
    out.push_back(s);
  }
  if (r < p) {
    std::vector<PlannedStep> scatter;
    int region = 0;
    for (int j = 0; j < levels; ++j) {
      const int bit = (r >> j) & 1, keep = 2 * region + bit, give = 2 * region + 1 - bit;
      PlannedStep s = planned(first + j, "reduce-scatter", j + 1, levels, 1 << (j + 1));
      s.send_to = s.recv_from = r ^ (1 << j);
      s.send_chunk = give;
      s.recv_chunk = keep;
      halving_piece(n, j + 1, give, &s.send_lo, &s.send_hi);
      halving_piece(n, j + 1, keep, &s.recv_lo, &s.recv_hi);
      scatter.push_back(s);
      region = keep;
    }
    out.insert(out.end(), scatter.begin(), scatter.end());
    for (int j = levels - 1; j >= 0; --j) {  // the allgather: each level's pieces the other way
      const PlannedStep& rs = scatter[size_t(j)];
      PlannedStep s = planned(first + 2 * levels - 1 - j, "allgather", levels - j, levels, rs.parts);
      s.send_to = s.recv_from = rs.send_to;
      s.send_chunk = rs.recv_chunk;
      s.send_lo = rs.recv_lo;
      s.send_hi = rs.recv_hi;
      s.recv_chunk = rs.send_chunk;
      s.recv_lo = rs.send_lo;
      s.recv_hi = rs.send_hi;
      out.push_back(s);
    }
  }
  if (folds && (r >= p || r < w - p)) {
    PlannedStep s = planned(first + 2 * levels, "unfold", 1, 1, 1);
    if (r < w - p) s.send_to = r + p;
    if (r >= p) s.recv_from = r - p;
    whole(&s, r < w - p, r >= p);
    out.push_back(s);
  }
  return out;
}

std::vector<PlannedStep> direct_plan(int w, int r, size_t n) {
  std::vector<PlannedStep> out;
  for (int k = 1; k < w; ++k) {
    PlannedStep s = planned(k - 1, "exchange", k, w - 1, 1);
    s.send_to = mod(r + k, w);
    s.recv_from = mod(r - k, w);
    s.send_chunk = s.recv_chunk = 0;
    s.send_hi = s.recv_hi = n;
    out.push_back(s);
  }
  return out;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

std::vector<PlannedStep> planned_steps(AllreduceAlgorithm a, int w, int r, size_t n) {
  if (w <= 1 || n == 0) return {};
  switch (a) {
    case AllreduceAlgorithm::kRing:
      return ring_plan(w, r, n);
    case AllreduceAlgorithm::kHalvingDoubling:
      return halving_doubling_plan(w, r, n);
    case AllreduceAlgorithm::kAdasum:  // the same pieces (W a power of two), combined instead of summed
      return (w & (w - 1)) == 0 ? halving_doubling_plan(w, r, n) : std::vector<PlannedStep>{};
    case AllreduceAlgorithm::kDirect:
      return direct_plan(w, r, n);
    default:
      return {};
  }
}

std::string phase_position(AllreduceAlgorithm a, int w, int step) {
  if (w <= 1 || step < 0) return "";
  auto at = [](const char* phase, int k, int of) {
    return std::string(phase) + " " + std::to_string(k) + "/" + std::to_string(of);
  };
  if (a == AllreduceAlgorithm::kRing && step < 2 * (w - 1))
    return step < w - 1 ? at("reduce-scatter", step + 1, w - 1) : at("allgather", step - (w - 1) + 1, w - 1);
  if (a == AllreduceAlgorithm::kDirect && step < w - 1) return at("exchange", step + 1, w - 1);
  if (a != AllreduceAlgorithm::kHalvingDoubling && a != AllreduceAlgorithm::kAdasum) return "";
  const int p = largest_power_of_two(w), levels = log2_of(p), first = w > p ? 1 : 0;
  if (first && step == 0) return at("fold", 1, 1);
  const int k = step - first;
  if (k < levels) return at("reduce-scatter", k + 1, levels);
  if (k < 2 * levels) return at("allgather", k - levels + 1, levels);
  if (first && k == 2 * levels) return at("unfold", 1, 1);
  return "";
}

std::string layers_covering(size_t lo, size_t hi) {
  std::string out;
  if (lo >= hi) return out;
  for (const ParamView& p : Net::kParams) {
    if (p.offset >= hi || p.offset + p.count <= lo) continue;
    out += (out.empty() ? "" : "+") + std::string(p.name);
  }
  return out;
}

AllreduceCost allreduce_cost(AllreduceAlgorithm a, int w, int r, size_t n, size_t elem_bytes, double alpha_us,
                             double beta_us_per_byte) {
  AllreduceCost c;
  for (const PlannedStep& s : planned_steps(a, w, r, n)) {
    if (s.send_to >= 0) {
      ++c.messages;
      c.sent += (s.send_hi - s.send_lo) * elem_bytes;
    }
    if (s.recv_from >= 0) c.received += (s.recv_hi - s.recv_lo) * elem_bytes;
  }
  const double bytes = double(n) * double(elem_bytes), W = w;
  const std::string N = std::to_string(uint64_t(n) * elem_bytes) + " B", Ws = std::to_string(w);
  const std::string exact = " = " + std::to_string(c.sent) + " B sent";
  if (a == AllreduceAlgorithm::kRing) {
    c.formula = "2(W-1)/W x N = 2x" + std::to_string(w - 1) + "/" + Ws + " x " + N + exact;
    c.model = "2(W-1) alpha + 2(W-1)/W N beta";
    c.predicted_us = 2 * (W - 1) * alpha_us + 2 * (W - 1) / W * bytes * beta_us_per_byte;
  } else if (a == AllreduceAlgorithm::kHalvingDoubling) {
    const int p = largest_power_of_two(w);
    const double P = p;
    if (p == w) {
      c.formula = "2(W-1)/W x N = 2x" + std::to_string(w - 1) + "/" + Ws + " x " + N + exact;
      c.model = "2 log2(W) alpha + 2(W-1)/W N beta";
      c.predicted_us = 2 * log2_of(w) * alpha_us + 2 * (W - 1) / W * bytes * beta_us_per_byte;
    } else {
      c.formula = std::string(r >= p ? "N (fold) = " + N : "2(P-1)/P x N") + (r < w - p ? " + N (unfold)" : "") +
                  ", P = " + std::to_string(p) + exact;
      c.model = "2 log2(P) alpha + 2(P-1)/P N beta + 2 (alpha + N beta) for the fold and unfold";
      c.predicted_us = 2 * log2_of(p) * alpha_us + 2 * (P - 1) / P * bytes * beta_us_per_byte +
                       2 * (alpha_us + bytes * beta_us_per_byte);
    }
  } else if (a == AllreduceAlgorithm::kDirect) {
    c.formula = "(W-1) x N = " + std::to_string(w - 1) + " x " + N + exact;
    c.model = "(W-1) alpha + (W-1) N beta";
    c.predicted_us = (W - 1) * alpha_us + (W - 1) * bytes * beta_us_per_byte;
  }
  if (!c.model.empty())
    c.model += " = " + num(c.predicted_us) + " us at alpha " + num(alpha_us) + " us, beta " +
               num(beta_us_per_byte * 1e3) + " ns/B";
  return c;
}
