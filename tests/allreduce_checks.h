// allreduce_checks: scripted checks of comm/allreduce.h's algorithms, shared by the in-process
// Gloo tests (tests/test_allreduce.cc, W threads) and the multi-process tool under mpirun
// (tests/tool_comm_worker.cc --script algorithms). Every check runs on every rank in the same
// order; failures are collected as one-line strings (an empty list means all passed):
//   closed forms    small-integer inputs whose exact sum every algorithm must give (float, fp16)
//   summation order random floats: our algorithms give exactly the bits of their documented order
//                   (computed here from every rank's inputs), the libraries' agree across ranks
//                   and runs; every rank holds the same bits
//   observer        one begin/end per call; each step's send has the matching receive on the peer
//                   (same step, bytes); the ring sends to r+1; bytes per rank as the comments say
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/half_float.h"
#include "tests/comm_checks.h"

namespace allreducecheck {

// Every call and step this rank saw, in order.
class RecordingObserver : public AllreduceObserver {
 public:
  struct Call {
    AllreduceAlgorithm algorithm;
    size_t bytes;
    int64_t begin_ns, end_ns = -1;
    std::vector<AllreduceStep> steps;
  };
  std::vector<Call> calls;
  int unmatched = 0;  // on_step or on_call_end outside a call, or a call begun twice
  void on_call_begin(AllreduceAlgorithm a, size_t bytes, int64_t begin_ns) override {
    if (!calls.empty() && calls.back().end_ns < 0) ++unmatched;
    calls.push_back(Call{a, bytes, begin_ns, -1, {}});
  }
  void on_step(const AllreduceStep& s) override {
    if (calls.empty() || calls.back().end_ns >= 0)
      ++unmatched;
    else
      calls.back().steps.push_back(s);
  }
  void on_call_end(int64_t end_ns) override {
    if (calls.empty() || calls.back().end_ns >= 0)
      ++unmatched;
    else
      calls.back().end_ns = end_ns;
  }
};

inline float add(float a, float b) { return a + b; }
inline half_bits add(half_bits a, half_bits b) { return float_to_half(half_to_float(a) + half_to_float(b)); }

// The sums our algorithms document (comm/allreduce*.cc), element by element from every rank's input.
template <typename T>
std::vector<T> reference_sum(AllreduceAlgorithm a, const std::vector<std::vector<T>>& v) {
  const int w = static_cast<int>(v.size());
  const size_t n = v[0].size();
  std::vector<T> out(n);
  if (a == AllreduceAlgorithm::kDirect) {  // rank order
    for (size_t i = 0; i < n; ++i) {
      T acc = v[0][i];
      for (int q = 1; q < w; ++q) acc = add(acc, v[q][i]);
      out[i] = acc;
    }
  } else if (a == AllreduceAlgorithm::kRing) {  // chunk c: v_c, then + v_(c+1), ... around the ring
    const size_t base = n / size_t(w), extra = n % size_t(w);
    for (int c = 0; c < w; ++c) {
      const size_t off = size_t(c) * base + std::min(size_t(c), extra), cnt = base + (size_t(c) < extra ? 1 : 0);
      for (size_t i = off; i < off + cnt; ++i) {
        T acc = v[c][i];
        for (int k = 1; k < w; ++k) acc = add(v[(c + k) % w][i], acc);
        out[i] = acc;
      }
    }
  } else {  // halving-doubling: fold into the largest power of two, then the butterfly's tree
    int p = 1;
    while (p * 2 <= w) p *= 2;
    std::vector<T> u(static_cast<size_t>(p));
    for (size_t i = 0; i < n; ++i) {
      for (int r = 0; r < p; ++r) u[r] = r + p < w ? add(v[r][i], v[r + p][i]) : v[r][i];
      for (int d = 1; d < p; d <<= 1)
        for (int b = 0; b < p; b += 2 * d) u[b] = add(u[b], u[b + d]);
      out[i] = u[0];
    }
  }
  return out;
}

inline bool ours(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::kDirect || a == AllreduceAlgorithm::kRing ||
         a == AllreduceAlgorithm::kHalvingDoubling;
}

template <typename T>
uint64_t fnv_bits(const std::vector<T>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// One step as it travels in the allgather of every rank's records.
struct WireStep {
  int32_t call, step, send_peer, recv_peer;
  uint64_t send_bytes, recv_bytes;
};

struct Checker {
  explicit Checker(Communicator& c) : comm(c) {}
  Communicator& comm;
  std::vector<std::string> failures;
  int rank() const { return comm.rank(); }
  int size() const { return comm.size(); }
  void fail(const std::string& what) {
    if (failures.size() < 30) failures.push_back("rank " + std::to_string(rank()) + ": " + what);
  }
  std::string tag(AllreduceAlgorithm a, size_t n, const char* type) const {
    return std::string(allreduce_algorithm_name(a)) + " " + type + " n=" + std::to_string(n) + " world " +
           std::to_string(size());
  }

  void sum(AllreduceAlgorithm a, float* p, size_t n, AllreduceObserver* o) { allreduce_sum(comm, a, p, n, o); }
  void sum(AllreduceAlgorithm a, half_bits* p, size_t n, AllreduceObserver* o) { allreduce_sum_f16(comm, a, p, n, o); }

  // Small integers times 1/4 (float) or 1/2 (fp16): every partial sum is exact, so every
  // algorithm must give exactly the closed form tri * value, tri = W(W+1)/2.
  void closed_form(AllreduceAlgorithm a, size_t n) {
    const int w = size();
    const double tri = w * (w + 1) / 2.0;
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = commcheck::float_val(rank(), i);
    sum(a, f.data(), n, nullptr);
    first_mismatch(n, tag(a, n, "float closed form"),
                   [&](size_t i) { return f[i] == static_cast<float>(tri * commcheck::hash_int(i) * 0.25); });
    std::vector<half_bits> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = float_to_half(commcheck::half_exact_val(rank(), i));
    sum(a, h.data(), n, nullptr);
    first_mismatch(n, tag(a, n, "fp16 closed form"), [&](size_t i) {
      return half_to_float(h[i]) == static_cast<float>(tri * (commcheck::hash_int(i) % 16) * 0.5);
    });
  }

  // Random inputs (inexact sums): ours must give exactly the bits of their documented order; every
  // algorithm must give every rank the same bits, twice in a row.
  template <typename T>
  void summation_order(AllreduceAlgorithm a, size_t n, const char* type, T (*convert)(float)) {
    const int w = size();
    std::vector<std::vector<T>> inputs(static_cast<size_t>(w), std::vector<T>(n));
    for (int r = 0; r < w; ++r) {
      std::vector<float> x = commcheck::random_vector(r, n, 7);
      for (size_t i = 0; i < n; ++i) inputs[r][i] = convert(x[i]);
    }
    std::vector<T> got = inputs[rank()], again = inputs[rank()];
    sum(a, got.data(), n, nullptr);
    sum(a, again.data(), n, nullptr);
    const std::string what = tag(a, n, type) + " random inputs";
    if (got != again) fail(what + ": two calls on the same inputs gave different bits");
    if (ours(a)) {
      const std::vector<T> want = reference_sum(a, inputs);
      first_mismatch(n, what + " (bits of the documented summation order)",
                     [&](size_t i) { return std::memcmp(&got[i], &want[i], sizeof(T)) == 0; });
    }
    hashes.push_back(fnv_bits(got));  // compared across ranks in finish()
    hashed.push_back(what);
  }

  // The observer's view of one call of a: begin/end once, steps inside the call's time, and for
  // every step's send the peer's step with the same number receiving the same bytes from us.
  void observer(AllreduceAlgorithm a, size_t n) {
    const int w = size();
    const std::string what = tag(a, n, "float") + " observer";
    RecordingObserver rec;
    std::vector<float> f(n, 1.0f);
    sum(a, f.data(), n, &rec);
    std::vector<half_bits> h(n, float_to_half(1.0f));
    sum(a, h.data(), n, &rec);
    if (rec.calls.size() != 2 || rec.unmatched) {
      fail(what + ": " + std::to_string(rec.calls.size()) + " calls, " + std::to_string(rec.unmatched) + " unmatched");
      return;
    }
    for (int c = 0; c < 2; ++c) {
      const auto& call = rec.calls[c];
      const int call_id = calls++;
      const size_t elem = c == 0 ? sizeof(float) : sizeof(half_bits);
      if (call.algorithm != a || call.bytes != n * elem)
        fail(what + ": on_call_begin got the wrong algorithm or bytes");
      if (call.end_ns < call.begin_ns) fail(what + ": the call ends before it begins");
      uint64_t sent = 0, received = 0;
      for (const auto& s : call.steps) {
        if (s.begin_ns < call.begin_ns || s.end_ns < s.begin_ns || s.end_ns > call.end_ns)
          fail(what + ": step " + std::to_string(s.step) + " lies outside its call");
        steps.push_back(WireStep{call_id, s.step, s.send_peer, s.recv_peer, s.send_bytes, s.recv_bytes});
        step_what.push_back(what);
        sent += s.send_bytes;
        received += s.recv_bytes;
      }
      if (!ours(a) && !call.steps.empty()) fail(what + ": a library algorithm reported steps");
      if (a == AllreduceAlgorithm::kRing) check_ring(call.steps, n, elem, sent, what);
      if (a == AllreduceAlgorithm::kDirect && (sent != uint64_t(w - 1) * n * elem || received != sent))
        fail(what + ": direct sent " + std::to_string(sent) + " bytes, expected (W-1)*N*" + std::to_string(elem));
      if (a == AllreduceAlgorithm::kHalvingDoubling && (w & (w - 1)) == 0 && n % size_t(w) == 0 &&
          (sent != 2 * (n - n / size_t(w)) * elem || received != sent))
        fail(what + ": halving-doubling sent " + std::to_string(sent) + " bytes, expected 2(W-1)/W*N*" +
             std::to_string(elem));
    }
  }

  void check_ring(const std::vector<AllreduceStep>& steps, size_t n, size_t elem, uint64_t sent,
                  const std::string& what) {
    const int w = size(), r = rank();
    if (w == 1 || n == 0) {
      if (!steps.empty()) fail(what + ": a ring of one rank (or of nothing) took steps");
      return;
    }
    if (n >= size_t(w) && steps.size() != size_t(2 * (w - 1)))
      fail(what + ": " + std::to_string(steps.size()) + " ring steps, expected 2(W-1)");
    for (const auto& s : steps)
      if ((s.send_peer != -1 && s.send_peer != (r + 1) % w) || (s.recv_peer != -1 && s.recv_peer != (r + w - 1) % w))
        fail(what + ": step " + std::to_string(s.step) + " sends to " + std::to_string(s.send_peer) +
             " and receives from " + std::to_string(s.recv_peer) + ", not the ring's neighbours");
    // Rank r sends every chunk but (r+1) in the reduce-scatter and every chunk but (r+2) after.
    const size_t base = n / size_t(w), extra = n % size_t(w);
    auto count = [&](int c) { return base + (size_t(c) < extra ? 1 : 0); };
    const uint64_t want = (2 * n - count((r + 1) % w) - count((r + 2) % w)) * elem;
    if (sent != want) fail(what + ": ring sent " + std::to_string(sent) + " bytes, expected " + std::to_string(want));
  }

  // Every rank's steps to every rank; each send must meet the peer's receive of the same step.
  void match_peers() {
    const int w = size();
    const std::vector<WireStep>& mine = steps;
    uint64_t count = mine.size(), most = 0;
    std::vector<uint64_t> counts(static_cast<size_t>(w));
    comm.allgather(counts.data(), &count, sizeof count);
    for (uint64_t c : counts) most = std::max(most, c);
    if (most == 0) return;
    std::vector<WireStep> padded(mine), all(static_cast<size_t>(most) * w);
    padded.resize(most, WireStep{-1, -1, -1, -1, 0, 0});
    comm.allgather(all.data(), padded.data(), most * sizeof(WireStep));
    for (int q = 0; q < w; ++q)
      for (uint64_t k = 0; k < counts[q]; ++k) {
        const WireStep& s = all[size_t(q) * most + k];
        if (s.send_peer < 0 || s.send_peer != rank()) continue;  // this rank checks the sends it receives
        bool found = false;
        size_t at = 0;
        for (size_t j = 0; j < mine.size(); ++j)
          if (mine[j].call == s.call) {
            at = j;
            found |= mine[j].step == s.step && mine[j].recv_peer == q && mine[j].recv_bytes == s.send_bytes;
          }
        if (!found)
          fail((mine.empty() ? std::string("observer") : step_what[at]) + ": rank " + std::to_string(q) + " sent " +
               std::to_string(s.send_bytes) + " bytes here at step " + std::to_string(s.step) +
               " but this rank reports no such receive");
      }
    for (size_t j = 0; j < mine.size(); ++j) {  // and every receive has its send
      const WireStep& m = mine[j];
      if (m.recv_peer < 0) continue;
      bool found = false;
      const int q = m.recv_peer;
      for (uint64_t k = 0; k < counts[q]; ++k) {
        const WireStep& s = all[size_t(q) * most + k];
        found |= s.call == m.call && s.step == m.step && s.send_peer == rank() && s.send_bytes == m.recv_bytes;
      }
      if (!found)
        fail(step_what[j] + ": step " + std::to_string(m.step) + " received from rank " + std::to_string(q) +
             ", which reports no such send");
    }
  }

  template <typename F>
  void first_mismatch(size_t n, const std::string& what, F&& ok_at) {
    for (size_t i = 0; i < n; ++i)
      if (!ok_at(i)) {
        fail(what + ": first mismatch at element " + std::to_string(i) + " of " + std::to_string(n));
        return;
      }
  }

  // The cross-rank comparisons of everything checked so far, in two allgathers of each kind.
  void finish() {
    const int w = size();
    std::vector<uint64_t> all(hashes.size() * size_t(w));
    if (!hashes.empty()) comm.allgather(all.data(), hashes.data(), hashes.size() * sizeof(uint64_t));
    for (int r = 0; r < w; ++r)
      for (size_t k = 0; k < hashes.size(); ++k)
        if (all[size_t(r) * hashes.size() + k] != hashes[k])
          fail(hashed[k] + ": rank " + std::to_string(r) + " holds other bits than this rank");
    match_peers();
  }

  // The whole script for the given algorithms. light: the closed forms at every size, the rest at
  // one size each (for mpirun, whose W processes on a small machine make every call slow).
  void run_all(const std::vector<AllreduceAlgorithm>& algorithms, bool light = false) {
    const std::vector<size_t> order_sizes = light ? std::vector<size_t>{1001} : std::vector<size_t>{7, 21840};
    const std::vector<size_t> observer_sizes = light ? std::vector<size_t>{1024} : std::vector<size_t>{0, 3, 1024};
    for (AllreduceAlgorithm a : algorithms) {
      for (size_t n : {size_t(0), size_t(1), size_t(1001), size_t(21840), size_t(300001)}) closed_form(a, n);
      for (size_t n : order_sizes) {
        summation_order<float>(a, n, "float", [](float x) { return x; });
        summation_order<half_bits>(a, n, "fp16", [](float x) { return float_to_half(x); });
      }
      for (size_t n : observer_sizes) observer(a, n);
    }
    finish();
  }

  // Checked in finish(): result hashes (with what they were) and observed steps (with their call).
  std::vector<uint64_t> hashes;
  std::vector<std::string> hashed;
  std::vector<WireStep> steps;
  std::vector<std::string> step_what;
  int calls = 0;
};

}  // namespace allreducecheck
