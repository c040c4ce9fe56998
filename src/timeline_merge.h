// timeline_merge: the end of a timeline run, over the communicator: the gradient allreduces'
// wait/transfer split filled in on every rank, then every rank's part appended to rank 0's FILE.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"

// One gradient allreduce line in this rank's part, on rank 0's clock.
struct AllreducePatch {
  int64_t step;
  int64_t begin_ns, end_ns;
  uint64_t offset;                          // where its patch region (src/trace_json.h trace_patch) starts in the part
  int64_t on_cpu_ns = 0, run_delay_ns = 0;  // the thread's CPU clocks over it
};

// Collective. For each recorded gradient allreduce (the same steps on every rank): wait,
// transfer and descheduled by split_exchange over every rank's begin, end and run_delay
// (src/comm_split.h, the definition --metrics uses), and arrive = this begin minus the earliest;
// written into fd at each patch's offset.
// Returns "" or a one-line reason the ranks' records did not match (then nothing is written).
std::string patch_allreduce_waits(Communicator& comm, int fd, const std::vector<AllreducePatch>& patches);

// Collective. Rank r's part (bytes [0, part_bytes) of fd) reaches rank 0, which appends it to its
// own fd, rank by rank, in chunks of at most chunk bytes (sendrecv moves the same count both
// ways; rank 0 sends zeros back).
void gather_parts(Communicator& comm, int fd, uint64_t part_bytes, size_t chunk = 1 << 20);

// write(2) until done; throws std::runtime_error naming what on failure.
void write_all(int fd, const char* data, size_t n, const std::string& what);
