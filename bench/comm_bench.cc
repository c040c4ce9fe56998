// comm_bench: allreduce latency/bandwidth through baresgd's comm layer (make_communicator +
// allreduce_sum) and through the raw library call (gloo::allreduce / MPI_Allreduce) in one program.
//
// Run one process per rank under the launcher (it sets the BARESGD_* / OMPI_* environment):
//   ./launch -np W --gloo build/bench/comm_bench --rendezvous-dir DIR [--sizes B,B,...] [--min-time S]
//   ./launch -np W --mpi  build/bench/comm_bench [--sizes ...]
//   ./launch -np W --gloo build/bench/comm_bench --algorithms all [--sizes 87360]
// With the Gloo backend the raw side is a second Gloo context (tcp device on 127.0.0.1, FileStore
// on DIR, which every rank must see) running Gloo's own gloo::allreduce (ring) with gloo::sum
// (the layer may pick another algorithm, e.g. a direct exchange for small vectors); with
// MPI it is MPI_Allreduce(MPI_IN_PLACE, ..., MPI_COMM_WORLD) (MPI is initialized here first, so
// both sides share one MPI library state). Sizes are in bytes of float32 (rounded down to floats).
//
// Each size: one checked allreduce per layer (values rank+1, expecting W(W+1)/2), a warm-up, then
// timed calls on zeros in 4 rounds alternating the layers (comm, raw, comm, raw, ...), so load
// from other processes hits both alike; the count comes from 3 calibration calls of the comm
// layer (about --min-time per layer, the same on all ranks, 4..1000 calls). Rank 0 prints one line per (size, layer):
//   comm: backend=gloo layer=comm|raw world=W bytes=B floats=N iters=I lat_us=L best_us=M algbw_GBps=A busbw_GBps=U
// lat_us = the slowest rank's median per-call time; best_us = the slowest rank's fastest call;
// algbw = bytes / lat_us; busbw = algbw * 2(W-1)/W
// (the bytes each rank sends and receives in a ring allreduce, as NCCL's tests report it).
// --algorithms all|A,B,...: instead, each --allreduce algorithm of comm/allreduce.h that this
// backend runs (allreduce_sum(comm, A, ...)), timed the same way at each size (default: the
// 21,840-float MNIST gradient); rank 0 prints one line per (size, algorithm):
//   comm_algorithm: backend=gloo algorithm=ring world=W bytes=B floats=N iters=I lat_us=L best_us=M
//                   algbw_GBps=A busbw_GBps=U
// (a backend's unsupported algorithms, e.g. mpi on Gloo, print comm_algorithm_skipped lines).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "comm/communicator.h"

#if BARESGD_HAVE_GLOO
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#endif
#if BARESGD_HAVE_MPI
#include <mpi.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<size_t> sizes = {1 << 10, 1 << 12, 1 << 14, 1 << 16, 21840 * 4,
                               1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26};
  double min_time = 0.25;  // seconds per (size, layer), roughly
  std::string rendezvous_dir;
  bool sizes_given = false;
  std::vector<std::string> algorithms;  // --algorithms: time these instead of comm vs raw
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: comm_bench [--sizes BYTES,...] [--min-time SEC] [--rendezvous-dir DIR]\n"
               "                  [--algorithms all|auto,direct,ring,halving-doubling,gloo,mpi]\n");
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (i + 1 >= argc) usage();
    std::string v = argv[++i];
    if (s == "--sizes") {
      a.sizes.clear();
      a.sizes_given = true;
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) a.sizes.push_back(std::stoull(item));
    } else if (s == "--min-time") {
      a.min_time = std::atof(v.c_str());
    } else if (s == "--rendezvous-dir") {
      a.rendezvous_dir = v;
    } else if (s == "--algorithms") {
      if (v == "all") v = "auto,direct,ring,halving-doubling,gloo,mpi";
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) a.algorithms.push_back(item);
    } else {
      usage();
    }
  }
  return a;
}

// One in-place float sum allreduce over all ranks.
using Allreduce = std::function<void(float*, size_t)>;

// Calls per layer for about min_time: from 3 calibration calls of the layer, the slowest rank's
// mean (allgather, so every rank gets the same count), between 4 and 1000.
int calibrated_iterations(Communicator& comm, const Allreduce& ar, float* buf, size_t n, double min_time) {
  auto a = Clock::now();
  for (int i = 0; i < 3; ++i) ar(buf, n);
  double mine = std::chrono::duration<double>(Clock::now() - a).count() / 3;
  std::vector<double> all(comm.size());
  comm.allgather(all.data(), &mine, sizeof mine);
  const double per_call = std::max(1e-7, *std::max_element(all.begin(), all.end()));
  return int(std::min(1000.0, std::max(4.0, std::floor(min_time / per_call))));
}

// Checks one allreduce with values rank+1 (every element must become W(W+1)/2).
void check(const Allreduce& ar, std::vector<float>& buf, size_t n, int W, int r, const char* backend,
           const char* layer) {
  std::fill(buf.begin(), buf.end(), float(r + 1));
  ar(buf.data(), n);
  const float want = float(W) * float(W + 1) / 2;
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != want) {
      char msg[160];
      std::snprintf(msg, sizeof msg, "%s %s allreduce of %zu floats: element %zu is %g, expected %g", backend, layer, n,
                    i, double(buf[i]), double(want));
      throw std::runtime_error(msg);
    }
}

// One size: every layer checked, warmed up, then timed in kRounds alternating rounds (layer 0, 1,
// ..., 0, 1, ...) so that load from other processes hits all alike. Rank 0 prints one line per
// layer: "<prefix>: backend=B <key>=<name> world=W ...".
void bench_size(Communicator& comm, const char* backend, const std::vector<Allreduce>& ar,
                const std::vector<std::string>& names, const char* prefix, const char* key, size_t bytes,
                double min_time) {
  constexpr int kRounds = 4;
  const int W = comm.size(), r = comm.rank();
  const size_t n = bytes / sizeof(float), layers = ar.size();
  std::vector<float> buf(std::max<size_t>(n, 1));
  for (size_t l = 0; l < layers; ++l) check(ar[l], buf, n, W, r, backend, names[l].c_str());
  std::fill(buf.begin(), buf.end(), 0.0f);                   // zeros: repeated in-place sums stay finite
  for (size_t l = 0; l < layers; ++l) ar[l](buf.data(), n);  // warm-up
  const int per_round = std::max(1, calibrated_iterations(comm, ar[0], buf.data(), n, min_time) / kRounds);
  std::vector<std::vector<double>> t(layers);
  for (int round = 0; round < kRounds; ++round)
    for (size_t l = 0; l < layers; ++l) {
      comm.barrier();
      for (int i = 0; i < per_round; ++i) {
        auto a = Clock::now();
        ar[l](buf.data(), n);
        t[l].push_back(std::chrono::duration<double>(Clock::now() - a).count());
      }
    }
  for (size_t l = 0; l < layers; ++l) {
    std::sort(t[l].begin(), t[l].end());
    const int iters = int(t[l].size());
    double mine[2] = {t[l][iters / 2], t[l][0]};  // median, best
    std::vector<double> all(2 * W);
    comm.allgather(all.data(), mine, sizeof mine);
    double worst = 0, worst_best = 0;
    for (int i = 0; i < W; ++i) {
      worst = std::max(worst, all[2 * i]);
      worst_best = std::max(worst_best, all[2 * i + 1]);
    }
    if (r == 0) {
      const double algbw = double(n * sizeof(float)) / worst * 1e-9;
      std::printf(
          "%s: backend=%s %s=%s world=%d bytes=%zu floats=%zu iters=%d lat_us=%.2f "
          "best_us=%.2f algbw_GBps=%.4f busbw_GBps=%.4f\n",
          prefix, backend, key, names[l].c_str(), W, n * sizeof(float), n, iters, worst * 1e6, worst_best * 1e6, algbw,
          algbw * 2.0 * (W - 1) / W);
      std::fflush(stdout);
    }
  }
}

// --algorithms: each named algorithm this backend runs, at every size.
void bench_algorithms(Communicator& comm, const Args& args) {
  const std::string backend = comm.backend_name();
  std::vector<Allreduce> ar;
  std::vector<std::string> names;
  for (const std::string& name : args.algorithms) {
    const AllreduceAlgorithm a = parse_allreduce_algorithm(name);
    const std::string why = allreduce_unsupported_reason(a, backend, comm.size());
    if (!why.empty()) {
      if (comm.rank() == 0)
        std::printf("comm_algorithm_skipped: backend=%s algorithm=%s\n", backend.c_str(), name.c_str());
      continue;
    }
    ar.push_back([&comm, a](float* p, size_t n) { allreduce_sum(comm, a, p, n, nullptr); });
    names.push_back(name);
  }
  if (ar.empty()) throw std::runtime_error("none of --algorithms runs on the " + backend + " backend");
  for (size_t bytes : args.sizes)
    bench_size(comm, backend.c_str(), ar, names, "comm_algorithm", "algorithm", bytes, args.min_time);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  try {
    RankInfo info = discover_rank_info();
#if BARESGD_HAVE_MPI
    // Initialize MPI ourselves so the raw MPI_Allreduce and the comm layer share it; the layer
    // leaves an MPI it did not start alone, and we finalize after it is gone.
    bool own_mpi = false;
    if (info.backend == "mpi") {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
      own_mpi = true;
    }
#endif
    {
      CommOptions co;
      auto comm = make_communicator(co);
      const std::string backend = comm->backend_name();
      if (comm->size() < 2) throw std::runtime_error("comm_bench needs at least 2 ranks");
      if (!args.algorithms.empty()) {
        if (!args.sizes_given) args.sizes = {21840 * sizeof(float)};
        bench_algorithms(*comm, args);
        comm->barrier();
      } else {
        Allreduce layer = [&](float* p, size_t n) { comm->allreduce_sum(p, n); };
        Allreduce raw;

#if BARESGD_HAVE_GLOO
        std::shared_ptr<gloo::rendezvous::FileStore> file_store;
        std::shared_ptr<gloo::rendezvous::PrefixStore> prefix;
        std::shared_ptr<gloo::transport::Device> device;
        std::shared_ptr<gloo::rendezvous::Context> context;
        uint32_t tag = 0;
        if (backend == "gloo") {
          if (args.rendezvous_dir.empty())
            throw std::runtime_error("the raw Gloo side needs --rendezvous-dir DIR (shared by all ranks)");
          // A fresh subdirectory per job (rank 0 names it), so stale keys of an earlier run in the
          // same directory cannot be picked up.
          char token[64] = {0};
          if (comm->rank() == 0)
            std::snprintf(token, sizeof token, "job-%lld-%d",
                          (long long)std::chrono::system_clock::now().time_since_epoch().count(), int(getpid()));
          comm->broadcast(token, sizeof token, 0);
          const std::string dir = args.rendezvous_dir + "/" + token;
          ::mkdir(dir.c_str(), 0700);  // every rank tries; EEXIST is fine
          file_store = std::make_shared<gloo::rendezvous::FileStore>(dir);
          prefix = std::make_shared<gloo::rendezvous::PrefixStore>("comm_bench_raw", *file_store);
          gloo::transport::tcp::attr attr("127.0.0.1");
          device = gloo::transport::tcp::CreateDevice(attr);
          context = std::make_shared<gloo::rendezvous::Context>(comm->rank(), comm->size());
          context->setTimeout(std::chrono::seconds(60));
          context->connectFullMesh(*prefix, device);
          raw = [&](float* p, size_t n) {
            if (n == 0) return;
            gloo::AllreduceOptions o(context);
            o.setOutput(p, n);
            o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
            o.setTag(tag++);
            gloo::allreduce(o);
          };
        }
#endif
#if BARESGD_HAVE_MPI
        if (backend == "mpi") {
          raw = [](float* p, size_t n) {
            const size_t kChunk = size_t(1) << 30;
            for (size_t off = 0; off < n; off += kChunk) {
              int count = int(std::min(kChunk, n - off));
              if (MPI_Allreduce(MPI_IN_PLACE, p + off, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
                throw std::runtime_error("MPI_Allreduce failed");
            }
          };
        }
#endif
        if (!raw) throw std::runtime_error("no raw library call for backend " + backend);

        if (comm->rank() == 0) {
          std::printf("comm_info: backend=%s world=%d\n", backend.c_str(), comm->size());
          std::fflush(stdout);
        }
        for (size_t bytes : args.sizes)
          bench_size(*comm, backend.c_str(), {layer, raw}, {"comm", "raw"}, "comm", "layer", bytes, args.min_time);
        comm->barrier();
#if BARESGD_HAVE_GLOO
        context.reset();
        device.reset();
#endif
      }
    }
#if BARESGD_HAVE_MPI
    if (own_mpi) MPI_Finalize();
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comm_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
