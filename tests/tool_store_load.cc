// tool_store_load: the rendezvous store under W fake ranks, for `make bench`'s store rows
// (bench/store_load_bench.sh) and the start-up model in docs/comm.md.
//
//   tool_store_load W gather|per-key
//
// Serves ./launch's store (comm/store_server.h, with ./launch's limits for W ranks) on 127.0.0.1
// in this process, then starts W threads that do only what a Gloo rank does with it at start-up,
// no training: connect and authenticate, count themselves in (an add), publish a 40-byte hello,
// then read every rank's hello:
//   gather   one 'P' request polled (1 ms backoff doubling to 20 ms) until all W are there, the
//            W hellos in its one reply: O(W) requests in all;
//   per-key  a 'G' per peer, each missing key polled on the same backoff: W(W-1) requests at least,
//            the pattern of a rank that waits for its peers' keys one by one.
// All threads connect at once (they wait on one start signal). Prints one line:
//   store_load: ranks=W mode=M connect_s=S rendezvous_s=S requests=N requests_per_s=R reply_MB=B
// connect_s: start signal to the last rank authenticated; rendezvous_s: start signal to the last
// rank holding every hello. Exit 1 with one line when a rank fails (the first failure is named).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/socket_io.h"
#include "comm/store_client.h"
#include "comm/store_protocol.h"
#include "comm/store_server.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct RankResult {
  double connected_s = 0, done_s = 0;
  uint64_t requests = 0, reply_bytes = 0;
  std::string error;
};

std::string hello_key(int rank) {
  char key[32];
  std::snprintf(key, sizeof key, "job/hello/%07d", rank);
  return key;
}

// What one fake rank does, timed from `start`.
void fake_rank(const std::string& addr, const std::string& secret, int rank, int ranks, bool gather,
               Clock::time_point start, RankResult* out) {
  auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  try {
    StoreClient c(addr, secret, milliseconds(600000));
    out->connected_s = since_start();
    c.add("job/arrived", 1);
    c.set(hello_key(rank), std::string(40, char('a' + rank % 26)));  // "size host addr:port"-sized
    out->requests += 2;
    const Clock::time_point deadline = Clock::now() + std::chrono::minutes(30);
    socket_io::Backoff pause(milliseconds(1), milliseconds(20));
    if (gather) {
      GatheredKeys all;
      uint32_t have = 0;
      for (;;) {
        ++out->requests;
        if (c.try_gather("job/hello/", uint32_t(ranks), &all, &have)) break;
        if (!pause.wait(deadline)) throw std::runtime_error("the gather never completed");
      }
      for (const auto& e : all) out->reply_bytes += e.first.size() + e.second.size() + 8;
    } else {
      std::vector<int> missing;
      for (int r = 0; r < ranks; ++r)
        if (r != rank) missing.push_back(r);
      std::string value;
      while (!missing.empty()) {
        missing.erase(std::remove_if(missing.begin(), missing.end(),
                                     [&](int r) {
                                       ++out->requests;
                                       const bool found = c.try_get(hello_key(r), &value);
                                       out->reply_bytes += found ? value.size() + 1 : 1;
                                       return found;
                                     }),
                      missing.end());
        if (!missing.empty() && !pause.wait(deadline)) throw std::runtime_error("peers' hellos never all came");
      }
    }
    out->done_s = since_start();
  } catch (const std::exception& e) {
    out->error = "rank " + std::to_string(rank) + ": " + e.what();
  }
}

// Both ends of every connection live in this process: 2 descriptors a rank, and some to spare.
bool raise_fd_limit(int ranks) {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) != 0) return false;
  const rlim_t need = rlim_t(2) * ranks + 64;
  if (fds.rlim_cur >= need) return true;
  if (fds.rlim_max < need) return false;
  fds.rlim_cur = need;
  return setrlimit(RLIMIT_NOFILE, &fds) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc == 3 ? std::atoi(argv[1]) : 0;
  const std::string mode = argc == 3 ? argv[2] : "";
  if (ranks < 2 || ranks > 65536 || (mode != "gather" && mode != "per-key")) {
    std::fprintf(stderr, "usage: tool_store_load RANKS(2-65536) gather|per-key\n");
    return 2;
  }
  if (!raise_fd_limit(ranks)) {
    std::fprintf(stderr, "tool_store_load: %d fake ranks need %d open files; the hard limit (ulimit -Hn) is lower\n",
                 ranks, 2 * ranks + 64);
    return 1;
  }
  const std::string secret = random_secret_hex();
  StoreServer server("127.0.0.1", 0, secret, store_limits_for_ranks(size_t(ranks)));
  server.start();
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());

  std::vector<RankResult> results(ranks);
  std::mutex m;
  std::condition_variable go;
  bool started = false;
  Clock::time_point start;
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      {
        std::unique_lock<std::mutex> lock(m);
        go.wait(lock, [&] { return started; });
      }
      fake_rank(addr, secret, r, ranks, mode == "gather", start, &results[r]);
    });
  {
    std::lock_guard<std::mutex> lock(m);
    start = Clock::now();
    started = true;
  }
  go.notify_all();
  for (auto& t : threads) t.join();

  double connect_s = 0, done_s = 0;
  uint64_t requests = 0, reply_bytes = 0;
  for (const RankResult& r : results) {
    if (!r.error.empty()) {
      std::fprintf(stderr, "tool_store_load: %s\n", r.error.c_str());
      return 1;
    }
    connect_s = std::max(connect_s, r.connected_s);
    done_s = std::max(done_s, r.done_s);
    requests += r.requests;
    reply_bytes += r.reply_bytes;
  }
  std::printf(
      "store_load: ranks=%d mode=%s connect_s=%.3f rendezvous_s=%.3f requests=%llu requests_per_s=%.0f "
      "reply_MB=%.1f\n",
      ranks, mode.c_str(), connect_s, done_s, (unsigned long long)requests, requests / std::max(done_s, 1e-9),
      reply_bytes / 1e6);
  return 0;
}
