// tool_timeline_exchange: a rank of a ./launch job that records a timeline of a hand-made
// pairwise exchange (step k: sendrecv with rank XOR 2^k, W a power of two) reported through
// timeline_allreduce_observer() exactly as our allreduce algorithms report their steps, so the
// test sees the observer's slices and flow arrows over real ranks and a real merge.
//   tool_timeline_exchange FILE CALLS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <vector>

#include "comm/communicator.h"
#include "src/timeline.h"

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void exchange_call(Communicator& comm, AllreduceObserver* obs, size_t bytes) {
  std::vector<char> out(bytes, char(comm.rank())), in(bytes);
  obs->on_call_begin(AllreduceAlgorithm::kHalvingDoubling, bytes, now_ns());
  for (int k = 0; (1 << k) < comm.size(); ++k) {
    const int peer = comm.rank() ^ (1 << k);
    const int64_t t0 = now_ns();
    comm.sendrecv(out.data(), in.data(), bytes, peer);
    obs->on_step({k, "exchange", peer, peer, bytes, bytes, t0, now_ns()});
  }
  obs->on_call_end(now_ns());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tool_timeline_exchange FILE CALLS\n");
    return 2;
  }
  try {
    Options opts;
    opts.timeline = argv[1];
    const int calls = std::atoi(argv[2]);
    timeline_open(opts, discover_rank_info());
    std::unique_ptr<Communicator> comm = make_communicator(CommOptions{});
    timeline_start(*comm, 1, GradientAveraging{});
    AllreduceObserver* obs = timeline_allreduce_observer();
    if (!obs) throw std::runtime_error("no observer with the timeline on");
    for (int c = 0; c < calls; ++c) {
      timeline_step(c);
      exchange_call(*comm, obs, 1000 + 8 * size_t(c));
    }
    timeline_finish(*comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tool_timeline_exchange: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
