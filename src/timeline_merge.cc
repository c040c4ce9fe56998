// timeline_merge: fills the allreduce wait/transfer values and gathers the parts to rank 0.
#include "src/timeline_merge.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "src/comm_split.h"
#include "src/trace_json.h"

void write_all(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(what + ": write failed: " + std::strerror(errno));
    data += w;
    n -= size_t(w);
  }
}

namespace {

void pwrite_all(int fd, const std::string& s, uint64_t offset) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::pwrite(fd, s.data() + done, s.size() - done, off_t(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(std::string("timeline: write failed: ") + std::strerror(errno));
    done += size_t(w);
  }
}

void pread_all(int fd, char* out, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, out + done, n - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw std::runtime_error(std::string("timeline: cannot read back this rank's part: ") +
                               (r == 0 ? "file shrank" : std::strerror(errno)));
    done += size_t(r);
  }
}

}  // namespace

std::string patch_allreduce_waits(Communicator& comm, int fd, const std::vector<AllreducePatch>& patches) {
  const int size = comm.size();
  int64_t count = int64_t(patches.size());
  std::vector<int64_t> counts(static_cast<size_t>(size));
  comm.allgather(counts.data(), &count, sizeof count);
  for (int r = 1; r < size; ++r)
    if (counts[r] != counts[0])
      return "rank " + std::to_string(r) + " recorded " + std::to_string(counts[r]) + " gradient allreduces, rank 0 " +
             std::to_string(counts[0]);
  if (count == 0) return "";
  // (step, begin, end, run_delay) of each patch, from every rank
  constexpr size_t kFields = 4;
  std::vector<int64_t> mine, all(size_t(size) * size_t(count) * kFields);
  for (const AllreducePatch& p : patches) mine.insert(mine.end(), {p.step, p.begin_ns, p.end_ns, p.run_delay_ns});
  comm.allgather(all.data(), mine.data(), mine.size() * sizeof(int64_t));
  for (size_t i = 0; i < patches.size(); ++i) {
    const AllreducePatch& p = patches[i];
    std::vector<CommSample> ranks;
    int64_t earliest = p.begin_ns;
    for (int r = 0; r < size; ++r) {
      const int64_t* e = all.data() + (size_t(r) * size_t(count) + i) * kFields;
      if (e[0] != p.step)
        return "rank " + std::to_string(r) + "'s gradient allreduce " + std::to_string(i) + " is at step " +
               std::to_string(e[0]) + ", this rank's at " + std::to_string(p.step);
      ranks.push_back(CommSample{e[1], e[2], 0, e[3]});
      earliest = std::min(earliest, e[1]);
    }
    const CommSplit c = split_exchange(ranks)[size_t(comm.rank())];
    pwrite_all(fd,
               trace_patch(TracePatch{c.wait_ns / 1e3, c.transfer_ns / 1e3, c.descheduled_ns / 1e3,
                                      (p.begin_ns - earliest) / 1e3}),
               p.offset);
  }
  return "";
}

void gather_parts(Communicator& comm, int fd, uint64_t part_bytes, size_t chunk) {
  const int size = comm.size(), rank = comm.rank();
  std::vector<uint64_t> sizes(static_cast<size_t>(size));
  comm.allgather(sizes.data(), &part_bytes, sizeof part_bytes);
  std::vector<char> buf(chunk), other(chunk, 0);
  for (int r = 1; r < size; ++r) {
    if (rank != 0 && rank != r) continue;
    for (uint64_t off = 0; off < sizes[r]; off += chunk) {
      const size_t n = size_t(std::min<uint64_t>(chunk, sizes[r] - off));
      if (rank == 0) {
        comm.sendrecv(other.data(), buf.data(), n, r);
        write_all(fd, buf.data(), n, "timeline: merging rank " + std::to_string(r) + "'s part");
      } else {
        pread_all(fd, buf.data(), n, off);
        comm.sendrecv(buf.data(), other.data(), n, 0);
      }
    }
  }
}
