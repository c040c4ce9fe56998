// clock_sync: ping-pong offset measurement between rank 0 and every other rank.
#include "src/clock_sync.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

namespace {

// Rank 0's side with one peer: the best round's offset and bound.
void measure_peer(Communicator& comm, int peer, int rounds, int64_t (*now)(), int64_t* offset, int64_t* bound) {
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < rounds; ++k) {
    int64_t ping = k, ignored = 0, t_peer = 0;
    const int64_t t0 = now();
    comm.sendrecv(&ping, &ignored, sizeof ping, peer);  // the ping (peer's reply is ignored)
    comm.sendrecv(&ping, &t_peer, sizeof ping, peer);   // the peer's clock at arrival
    const int64_t t1 = now();
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      *offset = t_peer - (t0 + (t1 - t0) / 2);
      *bound = (t1 - t0 + 1) / 2;
    }
  }
}

// Rank 0's side of the bandwidth rounds with one peer: the best time of one kBetaBytes exchange.
int64_t best_big_exchange(Communicator& comm, int peer, int rounds, int64_t (*now)()) {
  std::vector<char> out(kBetaBytes), in(kBetaBytes);
  int64_t best = std::numeric_limits<int64_t>::max(), line_up = 0, ignored = 0;
  for (int k = 0; k < rounds; ++k) {
    comm.sendrecv(&line_up, &ignored, sizeof line_up, peer);
    const int64_t t0 = now();
    comm.sendrecv(out.data(), in.data(), kBetaBytes, peer);
    best = std::min(best, now() - t0);
  }
  return best;
}

// The peer's side of the bandwidth rounds.
void answer_big_exchanges(Communicator& comm, int rounds) {
  std::vector<char> out(kBetaBytes), in(kBetaBytes);
  int64_t line_up = 0, ignored = 0;
  for (int k = 0; k < rounds; ++k) {
    comm.sendrecv(&line_up, &ignored, sizeof line_up, 0);
    comm.sendrecv(out.data(), in.data(), kBetaBytes, 0);
  }
}

// A non-zero rank's side: answer each ping with the time it arrived.
void answer_pings(Communicator& comm, int rounds, int64_t (*now)()) {
  for (int k = 0; k < rounds; ++k) {
    int64_t dummy = 0, ignored = 0;
    comm.sendrecv(&dummy, &ignored, sizeof dummy, 0);
    const int64_t t = now();
    comm.sendrecv(&t, &ignored, sizeof t, 0);
  }
}

}  // namespace

ClockSync sync_clocks(Communicator& comm, int rounds, int64_t (*now)()) {
  const int size = comm.size();
  ClockSync s;
  s.begin_ns = now();
  s.offset_ns.assign(size_t(size), 0);
  s.bound_ns.assign(size_t(size), 0);
  double alpha_ns = 0, beta_ns = 0;
  if (comm.rank() == 0) {
    for (int r = 1; r < size; ++r) {
      measure_peer(comm, r, rounds, now, &s.offset_ns[r], &s.bound_ns[r]);
      const double alpha = double(s.bound_ns[r]);  // half the best round trip: one exchange
      alpha_ns += alpha;
      beta_ns += std::max(0.0, (double(best_big_exchange(comm, r, rounds, now)) - alpha) / double(kBetaBytes));
    }
    s.origin_ns = now();
  } else {
    answer_pings(comm, rounds, now);
    answer_big_exchanges(comm, rounds);
  }
  // offsets, bounds, the origin and the model's alpha and beta (in ps, ps/byte) in one broadcast
  std::vector<int64_t> all(s.offset_ns);
  all.insert(all.end(), s.bound_ns.begin(), s.bound_ns.end());
  all.push_back(s.origin_ns);
  all.push_back(int64_t(size > 1 ? alpha_ns / (size - 1) * 1e3 : 0));
  all.push_back(int64_t(size > 1 ? beta_ns / (size - 1) * 1e3 : 0));
  comm.broadcast(all.data(), all.size() * sizeof(int64_t), 0);
  s.offset_ns.assign(all.begin(), all.begin() + size);
  s.bound_ns.assign(all.begin() + size, all.begin() + 2 * size);
  s.origin_ns = all[size_t(2 * size)];
  s.alpha_us = double(all[size_t(2 * size + 1)]) * 1e-6;
  s.beta_us_per_byte = double(all[size_t(2 * size + 2)]) * 1e-6;
  s.end_ns = now();
  return s;
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
