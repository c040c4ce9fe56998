// allreduce: dispatch of --allreduce to the backend's default, the libraries' own allreduce or
// our algorithms (comm/allreduce_ring.cc, comm/allreduce_halving_doubling.cc and the direct
// exchange below), each call between the observer's on_call_begin and on_call_end.
#include "comm/allreduce.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/allreduce_internal.h"

namespace allreduce_detail {
namespace {

// The direct exchange (--allreduce direct), over exchange() on any backend.
// How it works: at step k-1 (k = 1..W-1) rank r sends its whole vector to rank r+k and receives
// rank r-k's (mod W); then every rank sums the W vectors in rank order, ((v_0 + v_1) + v_2) + ...,
// so all ranks get the same bits (the order the Gloo backend's own direct exchange uses).
// Cost: W-1 steps, each rank sends (and receives) (W-1) * N * sizeof(element) bytes: the fewest
// dependent steps of any of ours for W=2 (one), the most bytes as W grows. (The Gloo backend's
// default for small vectors, --allreduce auto, posts all W-1 sends at once instead of one step
// after another, and gives the same sums.)
template <typename T>
void direct(Communicator& comm, T* data, size_t n, AllreduceObserver* observer) {
  const int w = comm.size(), r = comm.rank();
  if (n == 0 || w == 1) return;
  thread_local std::vector<T> all;
  all.resize(n * size_t(w));
  std::copy(data, data + n, all.begin() + size_t(r) * n);
  Steps<T> steps(comm, observer, data, n);
  const Piece whole{0, n, 0};
  for (int k = 1; k < w; ++k) {
    const int to = (r + k) % w, from = (r + w - k) % w;
    steps.run(k - 1, "exchange", 1, whole, to, whole, from, all.data() + size_t(from) * n);
  }
  std::copy(all.begin(), all.begin() + n, data);
  for (int q = 1; q < w; ++q) add_into(data, all.data() + size_t(q) * n, n);
}

}  // namespace

void direct_allreduce(Communicator& comm, float* data, size_t n, AllreduceObserver* observer) {
  direct(comm, data, n, observer);
}
void direct_allreduce(Communicator& comm, half_bits* data, size_t n, AllreduceObserver* observer) {
  direct(comm, data, n, observer);
}

}  // namespace allreduce_detail

namespace {

using namespace allreduce_detail;

void refuse_unsupported(const Communicator& comm, AllreduceAlgorithm a) {
  const std::string why = allreduce_unsupported_reason(a, comm.backend_name(), comm.size());
  if (!why.empty()) throw std::invalid_argument(why);
}

template <typename T>
void run(Communicator& comm, AllreduceAlgorithm a, T* data, size_t n, AllreduceObserver* observer) {
  switch (a) {
    case AllreduceAlgorithm::kAuto:
      if constexpr (std::is_same<T, float>::value)
        comm.allreduce_sum(data, n);
      else
        comm.allreduce_sum_f16(data, n);
      return;
    case AllreduceAlgorithm::kGloo:
    case AllreduceAlgorithm::kMpi:
      refuse_unsupported(comm, a);
      if constexpr (std::is_same<T, float>::value)
        comm.library_allreduce_sum(data, n);
      else
        comm.library_allreduce_sum_f16(data, n);
      return;
    case AllreduceAlgorithm::kDirect:
      direct_allreduce(comm, data, n, observer);
      return;
    case AllreduceAlgorithm::kRing:
      ring_allreduce(comm, data, n, observer);
      return;
    case AllreduceAlgorithm::kHalvingDoubling:
      halving_doubling_allreduce(comm, data, n, observer);
      return;
    case AllreduceAlgorithm::kAdasum:
      break;  // not a sum: adasum_allreduce (comm/gradient_averaging.h)
  }
  throw std::invalid_argument("allreduce: unknown algorithm " + std::to_string(static_cast<int>(a)));
}

template <typename T>
void observed(Communicator& comm, AllreduceAlgorithm a, T* data, size_t n, AllreduceObserver* observer) {
  if (!observer) return run(comm, a, data, n, nullptr);
  observer->on_call_begin(a, n * sizeof(T), now_ns());
  run(comm, a, data, n, observer);
  observer->on_call_end(now_ns());
}

}  // namespace

void allreduce_sum(Communicator& comm, AllreduceAlgorithm a, float* data, size_t n, AllreduceObserver* observer) {
  observed(comm, a, data, n, observer);
}

void allreduce_sum_f16(Communicator& comm, AllreduceAlgorithm a, half_bits* data, size_t n,
                       AllreduceObserver* observer) {
  observed(comm, a, data, n, observer);
}
