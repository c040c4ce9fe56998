// backend_mpi: the Communicator over MPI (the only file that includes mpi.h).
//
// MPI_Init_thread(SERIALIZED) at construction (unless the process already initialized MPI),
// MPI_Finalize at destruction. All calls go through a duplicate of MPI_COMM_WORLD with
// MPI_ERRORS_RETURN, and any failure becomes a one-line std::runtime_error naming the rank, the
// MPI call and the MPI error string. Counts above INT_MAX are split into several calls.
// fp16 sums use a 2-byte contiguous datatype and a commutative user op that adds in float and
// rounds to half (round-to-nearest-even), like Horovod's float16_sum.
// cross_rank/cross_size come from MPI_Comm_split(world, color = local_rank, key = rank).
// exchange (the steps of comm/allreduce_*.cc) is MPI_Sendrecv with MPI_PROC_NULL for an absent side.
// open_gather_channel (the overlapped averaging's buckets) is persistent MPI_Send_init/MPI_Recv_init
// requests to and from every peer: start = MPI_Startall, progress = MPI_Testall (MPI moves a message
// only inside MPI calls; the trainer calls it between layers), wait = MPI_Waitall.
//
// --comm-timeout (CommOptions::comm_timeout): every call that waits on a peer (the collectives,
// sendrecv, exchange, a gather channel's wait) is bracketed by a CollectiveWatchdog
// (comm/collective_watchdog.h): its name and start time. A thread of the watchdog sleeps on a
// condition variable until the open call's deadline; a call still open then prints one line --
// this rank, the call (and its peer when it has one), how long it has waited -- waits 2 s so
// the other live ranks, stuck in the same collective since about the same moment, print theirs
// (./launch names the ranks that never did), and calls MPI_Abort: mpirun (or srun) then ends every
// rank and exits non-zero.
// Why a watchdog thread and not MPI_Iallreduce/MPI_Ibcast + an MPI_Test loop with the deadline:
//   - the calls stay the blocking ones: Open MPI's nonblocking collectives (libnbc) use other
//     algorithms than its blocking ones (tuned), so the sums' order -- and the bits the
//     equivalence tests compare -- would change, and a test loop adds a clock read per poll;
//   - MPI_Test would not name the late peer anyway: a request says "not done", not who is
//     missing, so the only gain would be an abort from the main thread.
// The price: MPI_Abort is called from the watchdog's thread while the main thread is inside MPI
// under MPI_THREAD_SERIALIZED. Open MPI's MPI_Abort does not touch the communicator the main
// thread waits in: it prints, tells its daemon (PMIx) to kill the job and exits; should it
// return, the watchdog _exits(1) itself.
//
// Shutdown: MPI_Finalize is a collective fence in Open MPI; a rank that finalizes while the
// others still wait in a collective would hang there. So after a failed MPI call, or when the
// communicator is destroyed during stack unwinding, we skip MPI_Finalize and let the process exit:
// mpirun/srun then reports the failed rank and tears the job down.
// C API only: skip the deprecated C++ bindings (and their warnings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/collective_watchdog.h"
#include "comm/comm_internal.h"
#include "comm/half_float.h"
#include "comm/library_versions.h"

namespace {

constexpr size_t kMaxChunk = size_t(1) << 30;  // elements or bytes per MPI call (< INT_MAX)
constexpr int kSendRecvTag = 0x5e5d;
constexpr int kExchangeTag = 0x5e5e;
constexpr int kGatherChannelTag = 0x5f00;  // + channel number
// After a timeout's line, before MPI_Abort: the other live ranks' watchdogs fire within the time
// their collectives started apart (a step's compute at most, usually), and print their lines.
constexpr std::chrono::milliseconds kAbortGrace{2000};
// A watchdog waking this many seconds past its deadline was not running (stopped or starved).
// A stopped rank wakes when mpirun's kill continues it, at least about kAbortGrace late; a live
// one as soon as the scheduler runs its thread. Half the grace tells the two apart under load.
constexpr double kLateWake = 1.0;

std::string one_decimal(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  return buf;
}

void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const half_bits* a = static_cast<const half_bits*>(in);
  half_bits* b = static_cast<half_bits*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}

std::string mpi_error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING + 1] = {0};
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(buf, static_cast<size_t>(len));
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(const RankInfo& env, const CommOptions& opts) : info_(env), timeout_(opts.comm_timeout) {
    info_.backend = "mpi";
    try {
      init();
      if (info_.size > 1)
        watchdog_.reset(new CollectiveWatchdog(
            timeout_, [this](const std::string& name, double s, double late) { expired(name, s, late); }));
    } catch (...) {
      release(/*finalize=*/!broken_);
      throw;
    }
  }

  ~MpiCommunicator() override {
    watchdog_.reset();
    release(!broken_ && std::uncaught_exceptions() == 0);
  }

  const RankInfo& info() const override { return info_; }
  const char* backend_name() const override { return "mpi"; }

  void allreduce_sum(float* data, size_t n) override { allreduce(data, n, MPI_FLOAT, MPI_SUM); }
  void allreduce_sum(double* data, size_t n) override { allreduce(data, n, MPI_DOUBLE, MPI_SUM); }
  void allreduce_sum_f16(half_bits* data, size_t n) override { allreduce(data, n, f16_type_, f16_sum_); }

  void broadcast(void* data, size_t bytes, int root) override {
    check_peer(info_, root, "broadcast from root");
    char* p = static_cast<char*>(data);
    for (size_t off = 0; off < bytes; off += kMaxChunk) {
      int count = static_cast<int>(std::min(kMaxChunk, bytes - off));
      WatchedCall w(watchdog_.get(), "MPI_Bcast from rank " + std::to_string(root));
      check(MPI_Bcast(p + off, count, MPI_BYTE, root, comm_), "MPI_Bcast from root " + std::to_string(root));
    }
  }

  void barrier() override {
    WatchedCall w(watchdog_.get(), "MPI_Barrier");
    check(MPI_Barrier(comm_), "MPI_Barrier");
  }

  void allgather(void* out, const void* in, size_t bytes) override {
    if (bytes == 0) return;
    char* o = static_cast<char*>(out);
    const size_t n = static_cast<size_t>(info_.size);
    if (bytes <= kMaxChunk) {
      const void* src = in;
      if (in == o + info_.rank * bytes) {
        src = MPI_IN_PLACE;
      } else if (ranges_overlap(in, bytes, out, bytes * n)) {
        copy_.assign(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + bytes);
        src = copy_.data();
      }
      int count = static_cast<int>(bytes);
      WatchedCall w(watchdog_.get(), "MPI_Allgather");
      check(MPI_Allgather(src, src == MPI_IN_PLACE ? 0 : count, MPI_BYTE, o, count, MPI_BYTE, comm_), "MPI_Allgather");
      return;
    }
    // Per-rank blocks larger than INT_MAX bytes: gather chunk by chunk through a scratch buffer.
    std::vector<char> src(static_cast<const char*>(in), static_cast<const char*>(in) + bytes);
    std::vector<char> tmp;
    for (size_t off = 0; off < bytes; off += kMaxChunk) {
      size_t len = std::min(kMaxChunk, bytes - off);
      tmp.resize(len * n);
      WatchedCall w(watchdog_.get(), "MPI_Allgather");
      check(MPI_Allgather(src.data() + off, static_cast<int>(len), MPI_BYTE, tmp.data(), static_cast<int>(len),
                          MPI_BYTE, comm_),
            "MPI_Allgather");
      for (size_t r = 0; r < n; ++r) std::memcpy(o + r * bytes + off, tmp.data() + r * len, len);
    }
  }

  void sendrecv(const void* send, void* recv, size_t bytes, int peer) override {
    send = sendrecv_prologue(info_, send, recv, bytes, peer, &copy_);
    if (!send) return;
    const char* s = static_cast<const char*>(send);
    char* r = static_cast<char*>(recv);
    for (size_t off = 0; off < bytes; off += kMaxChunk) {
      int count = static_cast<int>(std::min(kMaxChunk, bytes - off));
      WatchedCall w(watchdog_.get(), "MPI_Sendrecv with rank " + std::to_string(peer));
      check(MPI_Sendrecv(s + off, count, MPI_BYTE, peer, kSendRecvTag, r + off, count, MPI_BYTE, peer, kSendRecvTag,
                         comm_, MPI_STATUS_IGNORE),
            "MPI_Sendrecv with rank " + std::to_string(peer));
    }
  }

  // MPI_Sendrecv with MPI_PROC_NULL for an absent side. Both sides are cut into the same
  // kMaxChunk pieces as the peer's, so piece k here matches piece k there.
  void exchange(const void* send, size_t send_bytes, int send_peer, void* recv, size_t recv_bytes,
                int recv_peer) override {
    if (!exchange_prologue(info_, &send, send_bytes, &send_peer, recv, recv_bytes, &recv_peer, &copy_)) return;
    if (send_peer == -1) send_bytes = 0;
    if (recv_peer == -1) recv_bytes = 0;
    const char* s = static_cast<const char*>(send);
    char* r = static_cast<char*>(recv);
    std::string what = "MPI_Sendrecv (";
    if (send_peer != -1) what += "send to rank " + std::to_string(send_peer) + (recv_peer != -1 ? ", " : "");
    if (recv_peer != -1) what += "receive from rank " + std::to_string(recv_peer);
    what += ")";
    for (size_t off = 0; off < std::max(send_bytes, recv_bytes); off += kMaxChunk) {
      const size_t send_count = off < send_bytes ? std::min(kMaxChunk, send_bytes - off) : 0;
      const size_t recv_count = off < recv_bytes ? std::min(kMaxChunk, recv_bytes - off) : 0;
      WatchedCall w(watchdog_.get(), what);
      check(MPI_Sendrecv(s + (send_count ? off : 0), static_cast<int>(send_count), MPI_BYTE,
                         send_count ? send_peer : MPI_PROC_NULL, kExchangeTag, r + (recv_count ? off : 0),
                         static_cast<int>(recv_count), MPI_BYTE, recv_count ? recv_peer : MPI_PROC_NULL, kExchangeTag,
                         comm_, MPI_STATUS_IGNORE),
            what);
    }
  }

  // MPI_Allreduce is already what allreduce_sum calls (--allreduce mpi and auto are the same call).
  void library_allreduce_sum(float* data, size_t n) override { allreduce_sum(data, n); }
  void library_allreduce_sum_f16(half_bits* data, size_t n) override { allreduce_sum_f16(data, n); }

  std::unique_ptr<GatherChannel> open_gather_channel(size_t bytes) override {
    if (bytes > size_t(INT_MAX))
      throw std::invalid_argument(describe_rank(info_) + ": gather channel over INT_MAX bytes");
    return std::unique_ptr<GatherChannel>(new MpiGatherChannel(this, channels_++, bytes));
  }

 private:
  void init() {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
      throw std::runtime_error(describe_rank(info_) +
                               ": MPI was already finalized in this process (MPI allows one init per process)");
    if (!initialized) {
      int provided = 0;
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Init_thread failed: " + mpi_error_string(rc));
      owns_mpi_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int rank = 0, size = 1;
    check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
    if (info_.source != "none" && (rank != info_.rank || size != info_.size)) {
      throw std::runtime_error(
          describe_rank(info_) + ": MPI_COMM_WORLD says rank " + std::to_string(rank) + " of " + std::to_string(size) +
          " but the " + (info_.source == "launch" ? std::string("launcher's BARESGD_*") : info_.source) +
          " environment says rank " + std::to_string(info_.rank) + " of " + std::to_string(info_.size) +
          ": MPI ranks must be started by mpirun (or srun --mpi=pmix), or use --communication gloo");
    }
    info_.rank = rank;
    info_.size = size;
    if (info_.source == "none") {  // MPI singleton or unknown launcher: ask MPI who shares this node
      MPI_Comm local;
      check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
      MPI_Comm_rank(local, &info_.local_rank);
      MPI_Comm_size(local, &info_.local_size);
      MPI_Comm_free(&local);
    }
    check(MPI_Comm_split(comm_, info_.local_rank, rank, &cross_), "MPI_Comm_split by local rank");
    check(MPI_Comm_rank(cross_, &info_.cross_rank), "MPI_Comm_rank(cross)");
    check(MPI_Comm_size(cross_, &info_.cross_size), "MPI_Comm_size(cross)");
    check(MPI_Type_contiguous(2, MPI_BYTE, &f16_type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&f16_type_), "MPI_Type_commit");
    check(MPI_Op_create(&half_sum, /*commute=*/1, &f16_sum_), "MPI_Op_create");
  }

  void release(bool finalize) {
    if (f16_sum_ != MPI_OP_NULL) MPI_Op_free(&f16_sum_);
    if (f16_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&f16_type_);
    if (cross_ != MPI_COMM_NULL) MPI_Comm_free(&cross_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (owns_mpi_ && finalize) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    }
    owns_mpi_ = false;
  }

  template <typename T>
  void allreduce(T* data, size_t n, MPI_Datatype type, MPI_Op op) {
    for (size_t off = 0; off < n; off += kMaxChunk) {
      int count = static_cast<int>(std::min(kMaxChunk, n - off));
      WatchedCall w(watchdog_.get(), "MPI_Allreduce");
      check(MPI_Allreduce(MPI_IN_PLACE, data + off, count, type, op, comm_), "MPI_Allreduce");
    }
  }

  // The watchdog's thread: a call has waited past --comm-timeout. One line, the grace for the
  // other ranks' lines, then MPI_Abort ends the job (see the header for why from this thread).
  // A watchdog that woke well past the deadline was frozen with its process: this rank is the
  // stopped one (mpirun's SIGCONT before its kill woke it), and its line says so.
  void expired(const std::string& name, double seconds, double late) {
    const bool p2p = name.find("rank ") != std::string::npos && name.rfind("MPI_Bcast", 0) != 0;
    std::string why;
    if (late > kLateWake)
      why = ", but its watchdog woke " + one_decimal(late) + " s late: this rank itself was stopped or starved";
    else if (p2p)
      why = " (a peer stopped responding)";
    else
      why = " waiting for a peer (a blocking MPI collective does not say which)";
    const std::string line = "train: error: " + describe_rank(info_) + ": " + name + " timed out after " +
                             one_decimal(seconds) + " s (--comm-timeout " + one_decimal(timeout_.count() / 1000.0) +
                             " s)" + why + "; ending the job with MPI_Abort\n";
    if (::write(STDERR_FILENO, line.data(), line.size()) < 0) {
      // stderr is gone: nothing left to tell it on
    }
    std::this_thread::sleep_for(kAbortGrace);
    MPI_Abort(MPI_COMM_WORLD, 1);
    ::_exit(1);
  }

  void check(int rc, const std::string& what) {
    if (rc == MPI_SUCCESS) return;
    broken_ = true;
    throw std::runtime_error(describe_rank(info_) + ": " + what + " failed: " + mpi_error_string(rc));
  }

  RankInfo info_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<CollectiveWatchdog> watchdog_;  // null for a world of one
  bool owns_mpi_ = false;
  bool broken_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm cross_ = MPI_COMM_NULL;
  MPI_Datatype f16_type_ = MPI_DATATYPE_NULL;
  MPI_Op f16_sum_ = MPI_OP_NULL;
  std::vector<uint8_t> copy_;
  int channels_ = 0;  // gather channels opened: the next one's tag offset

  // Persistent requests: receive every peer's bytes at peer * bytes, send ours from rank * bytes.
  class MpiGatherChannel : public GatherChannel {
   public:
    MpiGatherChannel(MpiCommunicator* c, int id, size_t bytes) : c_(c), bytes_(bytes) {
      const int sz = c->info_.size, r = c->info_.rank, tag = kGatherChannelTag + id, count = int(bytes);
      all_.assign(bytes * size_t(sz), 0);
      for (int p = 0; p < sz && bytes > 0; ++p) {
        if (p == r) continue;
        reqs_.push_back(MPI_REQUEST_NULL);
        c->check(MPI_Recv_init(all_.data() + size_t(p) * bytes, count, MPI_BYTE, p, tag, c->comm_, &reqs_.back()),
                 "MPI_Recv_init from rank " + std::to_string(p));
        reqs_.push_back(MPI_REQUEST_NULL);
        c->check(MPI_Send_init(all_.data() + size_t(r) * bytes, count, MPI_BYTE, p, tag, c->comm_, &reqs_.back()),
                 "MPI_Send_init to rank " + std::to_string(p));
      }
    }
    ~MpiGatherChannel() override {
      if (active_) return;  // unwinding from a failure: the requests may never finish; leave them to the exit
      for (MPI_Request& q : reqs_)
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
    }
    void start(const void* in) override {
      std::memcpy(all_.data() + size_t(c_->info_.rank) * bytes_, in, bytes_);
      if (reqs_.empty()) return;
      c_->check(MPI_Startall(int(reqs_.size()), reqs_.data()), "MPI_Startall (overlapped allreduce)");
      active_ = true;
    }
    void progress() override {
      if (!active_) return;
      int done = 0;
      c_->check(MPI_Testall(int(reqs_.size()), reqs_.data(), &done, MPI_STATUSES_IGNORE),
                "MPI_Testall (overlapped allreduce)");
    }
    const void* wait() override {
      WatchedCall w(c_->watchdog_.get(), "MPI_Waitall (overlapped allreduce, every peer)");
      if (active_)
        c_->check(MPI_Waitall(int(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE),
                  "MPI_Waitall (overlapped allreduce)");
      active_ = false;
      return all_.data();
    }

   private:
    MpiCommunicator* c_;
    const size_t bytes_;
    std::vector<uint8_t> all_;
    std::vector<MPI_Request> reqs_;
    bool active_ = false;
  };
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const RankInfo& info, const CommOptions& opts) {
  return std::unique_ptr<Communicator>(new MpiCommunicator(info, opts));
}

// comm/library_versions.h: callable before MPI_Init (MPI-3).
std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown";
  std::string v(buf, size_t(std::max(0, std::min(len, int(MPI_MAX_LIBRARY_VERSION_STRING)))));
  v = v.substr(0, v.find('\n'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\0')) v.pop_back();
  return v;
}
