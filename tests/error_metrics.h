// error_metrics: the suite's error measures between a result and a reference, all built on
// worse_err. NaN-safe: std::max(m, NaN) keeps m, so a measure written with it reports 0 for an
// all-NaN output; here a NaN or an infinity anywhere makes the error HUGE_VAL (a failure at any
// tolerance).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace testutil {

// The larger of the error so far m and a new one e; HUGE_VAL once either is NaN or infinite.
inline double worse_err(double m, double e) { return std::isfinite(m) && std::isfinite(e) ? std::max(m, e) : HUGE_VAL; }

// max over i of |a - b|
inline double max_abs_err(const float* a, const float* b, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) {
    m = worse_err(m, std::fabs(double(a[i]) - double(b[i])));
  }
  return m;
}

// max over i of |a - b| / max(|a|, |b|, 1)
inline double max_rel_err(const float* a, const float* b, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    m = worse_err(m, std::fabs(x - y) / std::max({std::fabs(x), std::fabs(y), 1.0}));
  }
  return m;
}

// The same over whole vectors; vectors of different sizes, or empty ones, are HUGE_VAL apart.
inline double max_rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return HUGE_VAL;
  return max_rel_err(a.data(), b.data(), a.size());
}

}  // namespace testutil
