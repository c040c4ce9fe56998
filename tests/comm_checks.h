// comm_checks: scripted collectives with closed-form expected results, shared by the in-process
// tests (tests/test_comm.cc, W threads) and the multi-process tool (tests/tool_comm_worker.cc,
// W processes under Gloo or mpirun). Every check runs on every rank in the same order; failures
// are collected as one-line strings (an empty list means all passed).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/gradient_averaging.h"
#include "comm/half_float.h"

namespace commcheck {

// Per-element pseudo-random integer in [-128, 127] (not periodic in any small stride).
inline int hash_int(size_t i) {
  return static_cast<int>(((static_cast<uint32_t>(i) * 2654435761u) >> 20) & 0xFFu) - 128;
}

// Rank-dependent values whose sums over <= 8 ranks are exact in float, double and half.
inline float float_val(int r, size_t i) { return static_cast<float>((r + 1) * hash_int(i)) * 0.25f; }
inline double double_val(int r, size_t i) { return (r + 1) * hash_int(i + 7) * 0.125; }
inline float half_exact_val(int r, size_t i) { return static_cast<float>((r + 1) * (hash_int(i) % 16)) * 0.5f; }
inline float half_inexact_val(int r, size_t i) { return 0.1f * (r + 1) + 1e-3f * static_cast<float>(i % 50); }
inline uint8_t byte_val(int r, size_t i) { return static_cast<uint8_t>(r * 31 + i * 7 + (i >> 8)); }
inline float grad_val(int r, size_t i) { return 0.5f * (r + 1) + 0.01f * static_cast<float>(hash_int(i)); }

// Deterministic vectors for Adasum (xorshift), different per rank.
inline std::vector<float> random_vector(int r, size_t n, uint32_t salt = 1) {
  uint32_t s = 2463534242u ^ (static_cast<uint32_t>(r) * 0x9E3779B9u) ^ salt;
  std::vector<float> v(n);
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x = static_cast<float>(static_cast<int32_t>(s % 2001) - 1000) / 1000.0f;
  }
  return v;
}

// The Adasum reduction tree that VHDD computes: level d combines the vectors of ranks r and r+d.
inline std::vector<float> adasum_reference(std::vector<std::vector<float>> v, const std::vector<Segment>& segs) {
  const int w = static_cast<int>(v.size());
  for (int d = 1; d < w; d <<= 1)
    for (int r = 0; r + d < w; r += 2 * d) adasum_combine(v[r].data(), v[r].data(), v[r + d].data(), segs);
  return v[0];
}

struct Checker {
  Communicator& comm;
  std::vector<std::string> failures;
  int rank() const { return comm.rank(); }
  int size() const { return comm.size(); }

  void fail(const std::string& what) {
    if (failures.size() < 20) failures.push_back("rank " + std::to_string(rank()) + ": " + what);
  }
  template <typename T>
  void expect_eq(const T& got, const T& want, const std::string& what) {
    if (!(got == want)) fail(what + ": got " + std::to_string(got) + ", want " + std::to_string(want));
  }
  void expect_near(double got, double want, double tol, const std::string& what) {
    if (!(std::fabs(got - want) <= tol))
      fail(what + ": got " + std::to_string(got) + ", want " + std::to_string(want) + " (tol " + std::to_string(tol) +
           ")");
  }
  // Only the first mismatch of a buffer is reported.
  template <typename F>
  void each(size_t n, const std::string& what, F&& ok_at) {
    for (size_t i = 0; i < n; ++i)
      if (!ok_at(i)) {
        fail(what + ": first mismatch at element " + std::to_string(i) + " of " + std::to_string(n));
        return;
      }
  }

  void allreduce(size_t n) {
    const int w = size();
    const double tri = w * (w + 1) / 2.0;
    std::string tag = " (n=" + std::to_string(n) + ", world " + std::to_string(w) + ")";
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = float_val(rank(), i);
    comm.allreduce_sum(f.data(), n);
    each(n, "allreduce float" + tag, [&](size_t i) { return f[i] == static_cast<float>(tri * hash_int(i) * 0.25); });

    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = double_val(rank(), i);
    comm.allreduce_sum(d.data(), n);
    each(n, "allreduce double" + tag, [&](size_t i) { return d[i] == tri * hash_int(i + 7) * 0.125; });

    std::vector<half_bits> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = float_to_half(half_exact_val(rank(), i));
    comm.allreduce_sum_f16(h.data(), n);
    each(n, "allreduce f16 (exact values)" + tag,
         [&](size_t i) { return half_to_float(h[i]) == static_cast<float>(tri * (hash_int(i) % 16) * 0.5); });

    // Inexact halves: each addition rounds to half, so allow (w-1) half-ulps of the result.
    for (size_t i = 0; i < n; ++i) h[i] = float_to_half(half_inexact_val(rank(), i));
    comm.allreduce_sum_f16(h.data(), n);
    each(n, "allreduce f16 (within half precision)" + tag, [&](size_t i) {
      double want = 0;
      for (int r = 0; r < w; ++r) want += half_to_float(float_to_half(half_inexact_val(r, i)));
      return std::fabs(half_to_float(h[i]) - want) <= w * std::ldexp(std::fabs(want), -11) + 1e-7;
    });
  }

  void broadcast(size_t bytes, int root) {
    std::vector<uint8_t> b(bytes);
    for (size_t i = 0; i < bytes; ++i) b[i] = rank() == root ? byte_val(root, i) : static_cast<uint8_t>(0xEE ^ rank());
    comm.broadcast(b.data(), bytes, root);
    each(bytes, "broadcast " + std::to_string(bytes) + " bytes from root " + std::to_string(root),
         [&](size_t i) { return b[i] == byte_val(root, i); });
  }

  void allgather(size_t bytes, bool in_place) {
    const size_t w = static_cast<size_t>(size());
    std::vector<uint8_t> out(bytes * w, 0xAB), in(bytes);
    for (size_t i = 0; i < bytes; ++i) in[i] = byte_val(rank(), i);
    const uint8_t* src = in.data();
    if (in_place) {
      if (bytes) std::memcpy(out.data() + rank() * bytes, in.data(), bytes);
      src = out.data() + rank() * bytes;
    }
    comm.allgather(out.data(), src, bytes);
    each(bytes * w, "allgather " + std::to_string(bytes) + " bytes" + (in_place ? " in place" : ""),
         [&](size_t i) { return out[i] == byte_val(static_cast<int>(i / bytes), i % bytes); });
  }

  // Pairs (0,1), (2,3), ...; an unpaired last rank exchanges with itself.
  void sendrecv(size_t bytes) {
    int peer = rank() ^ 1;
    if (peer >= size()) peer = rank();
    std::vector<uint8_t> s(bytes), r(bytes, 0xCD);
    for (size_t i = 0; i < bytes; ++i) s[i] = byte_val(rank(), i);
    comm.sendrecv(s.data(), r.data(), bytes, peer);
    each(bytes, "sendrecv " + std::to_string(bytes) + " bytes with rank " + std::to_string(peer),
         [&](size_t i) { return r[i] == byte_val(peer, i); });
  }

  // Rank 0 arrives late; everybody else must leave the barrier after rank 0 entered it. The ranks
  // share one machine's monotonic clock; rank 0's arrival time (whole microseconds, exact in a
  // double) reaches them by an allreduce after the barrier.
  void barrier() {
    using namespace std::chrono;
    const auto now_us = [] {
      return double(duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count());
    };
    comm.barrier();
    if (rank() == 0) std::this_thread::sleep_for(milliseconds(300));  // late, so an early exit shows
    const double arrived_us = now_us();
    comm.barrier();
    const double left_us = now_us();
    double rank0_arrived_us = rank() == 0 ? arrived_us : 0.0;
    comm.allreduce_sum(&rank0_arrived_us, 1);
    if (left_us < rank0_arrived_us)
      fail("barrier returned " + std::to_string(rank0_arrived_us - left_us) + " us before rank 0 arrived");
  }

  void average(size_t n, float predivide, bool fp16) {
    const int w = size();
    std::vector<float> g(n);
    for (size_t i = 0; i < n; ++i) g[i] = grad_val(rank(), i);
    GradientAveraging how;
    how.predivide_factor = predivide;
    how.fp16 = fp16;
    average_gradients(comm, g.data(), n, {}, how);
    std::string what =
        std::string("average_gradients") + (fp16 ? " fp16" : "") + " predivide " + std::to_string(predivide);
    each(n, what, [&](size_t i) {
      double want = 0, mag = 0;
      for (int r = 0; r < w; ++r) {
        want += grad_val(r, i);
        mag += std::fabs(grad_val(r, i));
      }
      want /= w;
      mag /= w;
      // fp16: every input and every partial sum rounds to half (2^-11 relative each).
      double tol = fp16 ? 2 * w * std::ldexp(mag, -11) + 1e-6 : 4e-7 * w * mag + 1e-7;
      return std::fabs(g[i] - want) <= tol;
    });
  }

  void adasum(size_t n, const std::vector<Segment>& segs, bool fp16) {
    const int w = size();
    std::vector<std::vector<float>> all;
    for (int r = 0; r < w; ++r) {
      all.push_back(random_vector(r, n));
      if (fp16)
        for (auto& x : all.back()) x = half_to_float(float_to_half(x));
    }
    // No segments means one segment over the whole buffer.
    std::vector<float> want = adasum_reference(all, segs.empty() ? std::vector<Segment>{{0, n}} : segs);
    std::vector<float> g = all[rank()];
    GradientAveraging how;
    how.adasum = true;
    how.fp16 = fp16;
    average_gradients(comm, g.data(), n, segs, how);
    std::string what = std::string("adasum") + (fp16 ? " fp16" : "") + " n=" + std::to_string(n);
    each(n, what, [&](size_t i) {
      double tol = fp16 ? std::ldexp(std::fabs(want[i]), -8) + 2e-3 * w : 1e-5 * (std::fabs(want[i]) + 1);
      return std::fabs(g[i] - want[i]) <= tol;
    });
    // Every rank must hold the same bits.
    uint64_t sum = 1469598103934665603ull;
    for (float x : g) {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      sum = (sum ^ u) * 1099511628211ull;
    }
    std::vector<uint64_t> sums(static_cast<size_t>(w));
    comm.allgather(sums.data(), &sum, sizeof sum);
    for (int r = 0; r < w; ++r)
      if (sums[r] != sum) fail(what + ": result differs between rank " + std::to_string(r) + " and this rank");
  }

  void adasum_rejects_non_power_of_two() {
    std::vector<float> g(10, 1.0f);
    GradientAveraging how;
    how.adasum = true;
    try {
      average_gradients(comm, g.data(), g.size(), {}, how);
      fail("adasum with " + std::to_string(size()) + " ranks did not throw");
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("power-of-two") == std::string::npos)
        fail(std::string("adasum error does not say power-of-two: ") + e.what());
    }
  }

  // The whole script. `big` adds the (1<<20)+3 element allreduce.
  void run_all(bool big) {
    const int w = size();
    std::vector<size_t> sizes = {0, 1, 1001};
    if (big) sizes.push_back((size_t(1) << 20) + 3);
    for (size_t n : sizes) allreduce(n);
    for (int root : {w - 1, w / 2, 0}) {
      broadcast(0, root);
      broadcast(1, root);
      broadcast(1001, root);
    }
    broadcast(size_t(1) << 20, w - 1);
    for (size_t b : {size_t(0), size_t(1), size_t(3), size_t(1000)}) {
      allgather(b, false);
      allgather(b, true);
    }
    for (size_t b : {size_t(0), size_t(1), size_t(1001), size_t(100003)}) sendrecv(b);
    barrier();
    for (bool fp16 : {false, true})
      for (float f : {1.0f, 2.5f}) average(21840, f, fp16);
    if ((w & (w - 1)) == 0) {
      std::vector<Segment> segs = {{0, 7}, {7, 100}, {107, 1000}, {1107, 3}, {1110, 20730}};
      adasum(21840, segs, false);
      adasum(21840, segs, true);
      adasum(3, {{0, 1}, {1, 2}}, false);  // fewer elements than ranks: empty halves
      adasum(1001, {}, false);
    } else {
      adasum_rejects_non_power_of_two();
    }
  }
};

}  // namespace commcheck
