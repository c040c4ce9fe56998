// communicator: the backend factory (picks single, Gloo or MPI from the options or environment)
// and small helpers every backend shares.
#include "comm/communicator.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm_internal.h"
#include "comm/slurm_store.h"

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

// The start of every refusal of a torchrun world ./train cannot join: it names torchrun's variables.
std::string torchrun_world(const RankInfo& info) {
  return "torchrun set RANK=" + std::to_string(info.rank) + " WORLD_SIZE=" + std::to_string(info.size);
}

std::string launched_by(const RankInfo& info) {
  if (info.source == "launch") return "started by ./launch";
  if (info.source == "ompi") return "started by mpirun";
  if (info.source == "slurm") return "started by srun";
  if (info.source == "torchrun") return "started by torchrun";
  return "a single process";
}

}  // namespace

std::string describe_rank(const RankInfo& info) {
  std::string s = "rank " + std::to_string(info.rank);
  if (!info.hostname.empty() && info.size > 1) s += " (host " + info.hostname + ")";
  return s;
}

void check_peer(const RankInfo& info, int peer, const char* op) {
  if (peer < 0 || peer >= info.size)
    throw std::invalid_argument("rank " + std::to_string(info.rank) + ": " + op + " with rank " + std::to_string(peer) +
                                ", but the world has ranks 0.." + std::to_string(info.size - 1));
}

bool ranges_overlap(const void* a, size_t an, const void* b, size_t bn) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return an && bn && pa < pb + bn && pb < pa + an;
}

const void* sendrecv_prologue(const RankInfo& info, const void* send, void* recv, size_t bytes, int peer,
                              std::vector<uint8_t>* scratch) {
  check_peer(info, peer, "sendrecv");
  if (bytes == 0) return nullptr;
  if (peer == info.rank) {
    std::memmove(recv, send, bytes);
    return nullptr;
  }
  if (!ranges_overlap(send, bytes, recv, bytes)) return send;
  scratch->assign(static_cast<const uint8_t*>(send), static_cast<const uint8_t*>(send) + bytes);
  return scratch->data();
}

bool exchange_prologue(const RankInfo& info, const void** send, size_t send_bytes, int* send_peer, void* recv,
                       size_t recv_bytes, int* recv_peer, std::vector<uint8_t>* scratch) {
  if (*send_peer != -1) check_peer(info, *send_peer, "exchange (send)");
  if (*recv_peer != -1) check_peer(info, *recv_peer, "exchange (receive)");
  if (send_bytes == 0) *send_peer = -1;
  if (recv_bytes == 0) *recv_peer = -1;
  const bool self_send = *send_peer == info.rank, self_recv = *recv_peer == info.rank;
  if (self_send || self_recv) {
    if (!(self_send && self_recv && send_bytes == recv_bytes))
      throw std::invalid_argument("rank " + std::to_string(info.rank) +
                                  ": exchange with itself must send and receive the same bytes to and from itself");
    std::memmove(recv, *send, send_bytes);
    return false;
  }
  if (*send_peer == -1 && *recv_peer == -1) return false;
  if (*send_peer != -1 && *recv_peer != -1 && ranges_overlap(*send, send_bytes, recv, recv_bytes)) {
    scratch->assign(static_cast<const uint8_t*>(*send), static_cast<const uint8_t*>(*send) + send_bytes);
    *send = scratch->data();
  }
  return true;
}

void Communicator::library_allreduce_sum(float*, size_t) {
  throw std::logic_error(std::string("the ") + backend_name() + " backend has no library allreduce");
}
void Communicator::library_allreduce_sum_f16(half_bits*, size_t) {
  throw std::logic_error(std::string("the ") + backend_name() + " backend has no library allreduce");
}

bool Communicator::sums_in_rank_order(size_t) const { return size() <= 2; }

namespace {
// The default GatherChannel: start() keeps a copy, wait() is one blocking allgather.
class BlockingGatherChannel : public GatherChannel {
 public:
  BlockingGatherChannel(Communicator& comm, size_t bytes)
      : comm_(comm), own_(bytes), all_(bytes * size_t(comm.size())) {}
  void start(const void* in) override {
    if (!own_.empty()) std::memcpy(own_.data(), in, own_.size());
  }
  const void* wait() override {
    comm_.allgather(all_.data(), own_.data(), own_.size());
    return all_.data();
  }

 private:
  Communicator& comm_;
  std::vector<unsigned char> own_, all_;
};
}  // namespace

std::unique_ptr<GatherChannel> Communicator::open_gather_channel(size_t bytes) {
  return std::unique_ptr<GatherChannel>(new BlockingGatherChannel(*this, bytes));
}

void assign_cross_ranks(RankInfo* info, const std::vector<int>& local_rank_of_rank) {
  int cross_rank = 0, cross_size = 0;
  for (int r = 0; r < static_cast<int>(local_rank_of_rank.size()); ++r) {
    if (local_rank_of_rank[r] != info->local_rank) continue;
    if (r < info->rank) ++cross_rank;
    ++cross_size;
  }
  info->cross_rank = cross_rank;
  info->cross_size = cross_size;
}

const char kDefaultJobId[] = "baresgd";

// --rendezvous-dir keys its files by the job id. A starter's id is the job's own (./launch: random;
// Open MPI: its job id and a digest of the job's random key; Slurm: job.step; torchrun: its run
// id); ranks started by hand have none, and a fixed default would let anyone who can write in the
// directory plant files for every such job (refused as theirs, but the job fails), and a killed
// job's stale claim stop the next. So they must name one, the same on every rank: --job-id ID or
// BARESGD_JOB_ID (docs/comm.md, "Rendezvous on a shared directory").
static void require_job_id_for_rendezvous_dir(const RankInfo& info, const CommOptions& opts) {
  if (opts.rendezvous_dir.empty() || !info.job_id_default || info.size <= 1) return;
  fail(describe_rank(info) +
       ": --rendezvous-dir needs a job id every rank shares and no one else can guess, and no starter gave one: "
       "pass --job-id ID on every rank (e.g. ID from `od -An -N8 -tx8 /dev/urandom`), or set BARESGD_JOB_ID");
}

std::unique_ptr<Communicator> make_communicator(const CommOptions& opts) {
  RankInfo info = discover_rank_info();
  if (!opts.job_id.empty()) {
    info.job_id = opts.job_id;
    info.job_id_default = false;
  }
  require_job_id_for_rendezvous_dir(info, opts);
  std::string backend = opts.backend.empty() ? info.backend : opts.backend;
  if (backend != "single" && backend != "gloo" && backend != "mpi")
    fail("unknown communication backend '" + backend + "' (expected gloo, mpi or single)");
  if (opts.start_timeout.count() <= 0 || opts.comm_timeout.count() <= 0)
    fail("communication timeouts must be positive (start " + std::to_string(opts.start_timeout.count()) + " ms, comm " +
         std::to_string(opts.comm_timeout.count()) + " ms)");
  info.backend = backend;

  if (info.source == "torchrun" && info.size > 1 && backend != "gloo")
    fail(torchrun_world(info) + " but --communication " + backend +
         " cannot join torchrun's job (only Gloo can); refusing to "
         "train as a separate world-size-1 job");
  if (backend == "single") {
    if (info.size != 1)
      fail("--communication single, but this process was " + launched_by(info) + " as rank " +
           std::to_string(info.rank) + " of " + std::to_string(info.size));
    return make_single_communicator(info);
  }
  if (backend == "gloo") {
#if BARESGD_HAVE_GLOO
    if (info.size > 1 && info.store_addr.empty() && info.c10d_store_addr.empty() && opts.rendezvous_dir.empty() &&
        !uses_slurm_store(info)) {
      std::string why = info.source == "slurm" ? std::string("srun started the ranks without MPI")
#if BARESGD_HAVE_MPI
                                                     + " (no PMI_*/PMIX_* variables: use srun --mpi=pmix for MPI)"
#else
                                                     + " (this ./train was built without MPI)"
#endif
                                               : launched_by(info) + " without BARESGD_STORE_ADDR";
      fail(describe_rank(info) + ": Gloo needs a rendezvous: " + why +
           "; pass --rendezvous-dir DIR (a directory every rank can reach, e.g. on a shared filesystem)");
    }
    if (!info.store_addr.empty() && opts.rendezvous_dir.empty() && info.secret.empty())
      fail(describe_rank(info) + ": BARESGD_STORE_ADDR=" + info.store_addr +
           " is set but BARESGD_SECRET is not (the launcher passes both)");
    return make_gloo_communicator(info, opts);
#else
    if (info.source == "torchrun" && info.size > 1)
      fail(torchrun_world(info) +
           " but this ./train was built without Gloo, the only backend that can join torchrun's job; "
           "refusing to train as a separate world-size-1 job");
    fail(
        "this ./train was built without Gloo (libgloo-dev missing); rebuild with libgloo-dev "
        "installed, or run over MPI: --num-proc N --communication mpi (or mpirun -np N ./train)");
#endif
  }
  // mpi
#if BARESGD_HAVE_MPI
  return make_mpi_communicator(info, opts);
#else
  fail(std::string("this ./train was built without MPI (libopenmpi-dev missing); rebuild with "
                   "libopenmpi-dev installed, or run over Gloo: --num-proc N --communication gloo") +
       (info.source == "ompi" || info.source == "slurm" ? " with --rendezvous-dir DIR (" + launched_by(info) + ")"
                                                        : ""));
#endif
}
