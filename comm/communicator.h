// communicator: the small interface every rank talks through (Gloo, MPI or single-process),
// and the factory that picks a backend from the environment (launcher, Open MPI or Slurm).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/half_float.h"

// Who this process is in the job. Filled from the environment by discover_rank_info().
struct RankInfo {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  std::string backend = "single";  // "single", "gloo" or "mpi"
  std::string source = "none";     // where it came from: "none", "launch", "ompi", "torchrun", "slurm",
                                   // "slurm-batch" (an sbatch script: a single process)
  std::string hostname;            // this rank's host name as the launcher knows it
  std::string host_addr;           // address Gloo binds to (the address the launcher reached us at)
  std::string store_addr;          // launcher's rendezvous store "host:port" (gloo)
  std::string c10d_store_addr;     // torchrun's c10d TCPStore "MASTER_ADDR:MASTER_PORT", else ""
  std::string secret;              // per-job secret for the store (from the environment only)
  std::string job_id;              // rendezvous key prefix
  // No starter named the job (no BARESGD_JOB_ID, Open MPI, Slurm or torchrun id): job_id is
  // kDefaultJobId, which --rendezvous-dir refuses (anyone could plant files for it); --job-id names one.
  bool job_id_default = false;
  // srun's job step, for the Gloo rendezvous rank 0 serves under srun (comm/slurm_store.h);
  // "" outside srun: SLURM_JOB_ID, SLURM_STEP_ID, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE.
  std::string slurm_job, slurm_step, slurm_nodelist, slurm_tasks_per_node;
  std::string munge_socket;  // BARESGD_MUNGE_SOCKET: munged's socket ("" = libmunge's default)
  std::string notice;        // one line for stderr when the environment was read otherwise
                             // than it seems (an sbatch script's SLURM_PROCID), else ""
  // Rank 0 serves the store at c10d_store_addr: torchrun's agent does not
  // (TORCHELASTIC_USE_AGENT_STORE=False or unset: --standalone, --rdzv_backend c10d, env://).
  bool c10d_store_on_rank0 = false;
};

// The job id of ranks that no starter named ("baresgd").
extern const char kDefaultJobId[];

struct CommOptions {
  std::string backend;            // "" = from environment; else "single", "gloo", "mpi"
  std::string rendezvous_dir;     // non-empty: Gloo FileStore on this shared directory
  std::string job_id;             // --job-id: non-empty replaces the environment's job id
  std::string network_interface;  // non-empty: bind Gloo to this interface name or address
  std::chrono::milliseconds start_timeout{30000};
  std::chrono::milliseconds comm_timeout{60000};
  // The rank has a core of its own (its host's ranks x compute threads fit its CPUs): a wait for
  // the gradient's bytes may spin on the socket instead of sleeping (Gloo's sync lane).
  bool spin_while_waiting = false;
};

// half_bits: comm/half_float.h.

// A persistent non-blocking allgather of a fixed number of bytes per rank: one bucket of the
// overlapped gradient averaging (comm/overlapped_averaging.h). Every rank opens the same channels
// in the same order and starts and waits them in the same order; start and wait alternate.
class GatherChannel {
 public:
  virtual ~GatherChannel() = default;
  // Copies this rank's bytes from `in` and starts sending them to every other rank.
  virtual void start(const void* in) = 0;
  // Lets a started exchange move without blocking (MPI: MPI_Testall); a no-op where the transport
  // moves the bytes by itself.
  virtual void progress() {}
  // Blocks until every rank's bytes are here (bounded by the backend's timeout); returns them in
  // rank order, size() * bytes, valid until the next start.
  virtual const void* wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const RankInfo& info() const = 0;
  int rank() const { return info().rank; }
  int size() const { return info().size; }
  int local_rank() const { return info().local_rank; }
  int local_size() const { return info().local_size; }
  int cross_rank() const { return info().cross_rank; }
  int cross_size() const { return info().cross_size; }
  virtual const char* backend_name() const = 0;

  // In-place element-wise sum over all ranks. n may be 0.
  virtual void allreduce_sum(float* data, size_t n) = 0;
  virtual void allreduce_sum(double* data, size_t n) = 0;
  // In-place sum of IEEE halves (summed in float, rounded to half after each addition as on the wire).
  virtual void allreduce_sum_f16(half_bits* data, size_t n) = 0;
  // Root's bytes to every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // out (size * bytes) = concatenation of every rank's in (bytes).
  virtual void allgather(void* out, const void* in, size_t bytes) = 0;
  // Exchange with one peer: send `send` (bytes) and receive into `recv` (bytes). Both ranks call it.
  virtual void sendrecv(const void* send, void* recv, size_t bytes, int peer) = 0;
  // One step of a ring or butterfly: send `send` (send_bytes) to send_peer and, at the same time,
  // receive recv_bytes from recv_peer into `recv`. A side with peer -1 or 0 bytes is skipped; the
  // rank send_peer makes the matching call receiving send_bytes from this rank. Self on both sides
  // copies. Throws std::invalid_argument for a peer outside -1..size-1, else like sendrecv.
  virtual void exchange(const void* send, size_t send_bytes, int send_peer, void* recv, size_t recv_bytes,
                        int recv_peer) = 0;
  // The backend library's own allreduce, whatever allreduce_sum picks (--allreduce gloo: gloo::allreduce;
  // --allreduce mpi: MPI_Allreduce). A backend without one throws std::logic_error (the caller checks
  // allreduce_unsupported_reason in comm/allreduce.h first).
  virtual void library_allreduce_sum(float* data, size_t n);
  virtual void library_allreduce_sum_f16(half_bits* data, size_t n);

  // Whether allreduce_sum of `bytes` bytes per rank gives every element as ((v0 + v1) + v2) + ...
  // in rank order, so that a gather followed by a local sum in rank order has the same bits. Any
  // sum of two ranks does (float addition commutes); the default says no for more.
  virtual bool sums_in_rank_order(size_t bytes) const;
  // A GatherChannel of `bytes` per rank. The default starts nothing: its wait() is a blocking
  // allgather (world size 1, or a backend without non-blocking sends).
  virtual std::unique_ptr<GatherChannel> open_gather_channel(size_t bytes);
  // Exchanges so far that this rank's own thread moved on Gloo's sync lane (comm/gloo_sync_lane.h),
  // one per region round; 0 on every other path (BARESGD_TIMING's lane_rounds).
  virtual uint64_t sync_lane_rounds() const { return 0; }
};

// Rank info from the environment: BARESGD_* (our launcher), OMPI_COMM_WORLD_* (mpirun),
// SLURM_* (srun), else a single process. Throws std::runtime_error on inconsistent values.
RankInfo discover_rank_info();

// The communicator for this process (connects, rendezvous, etc.). Throws std::runtime_error
// with a one-line message naming what failed (rank, host, address, timeout).
std::unique_ptr<Communicator> make_communicator(const CommOptions& opts);
