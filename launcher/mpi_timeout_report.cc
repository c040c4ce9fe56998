// mpi_timeout_report: see the header. The markers are the exact words comm/backend_mpi.cc writes.
#include "launcher/mpi_timeout_report.h"

#include <vector>

namespace {

const char kTimeoutMark[] = "s (--comm-timeout ";
const char kAbortMark[] = "; ending the job with MPI_Abort";
const char kStoppedMark[] = "this rank itself was stopped or starved";

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// "rank 2" or "ranks 0, 1, 3".
std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

MpiTimeoutLine classify_mpi_timeout_line(const std::string& text) {
  if (!has(text, kTimeoutMark) || !has(text, kAbortMark)) return MpiTimeoutLine::kNone;
  return has(text, kStoppedMark) ? MpiTimeoutLine::kStopped : MpiTimeoutLine::kWaited;
}

void MpiTimeoutReports::add(int rank, const std::string& text) {
  switch (classify_mpi_timeout_line(text)) {
    case MpiTimeoutLine::kWaited:
      waited.insert(rank);
      break;
    case MpiTimeoutLine::kStopped:
      stopped.insert(rank);
      break;
    case MpiTimeoutLine::kNone:
      break;
  }
}

std::string mpi_timeout_summary(const MpiTimeoutReports& r, int np, const std::string& how) {
  if (!r.any()) return "";
  std::vector<int> waited(r.waited.begin(), r.waited.end()), silent, stopped;
  for (int k = 0; k < np; ++k)
    if (r.stopped.count(k))
      stopped.push_back(k);
    else if (!r.waited.count(k))
      silent.push_back(k);
  std::string line = "launch: a collective timed out (--comm-timeout): ";
  line += waited.empty() ? "no rank waited for a peer" : rank_list(waited) + " waited for a peer";
  if (!stopped.empty()) line += "; " + rank_list(stopped) + " had been stopped (its own watchdog woke late)";
  if (!silent.empty()) line += "; " + rank_list(silent) + " never reported (stopped or stalled)";
  if (stopped.empty() && silent.empty()) line += "; every rank waited (no rank is named)";
  return line + "; mpirun " + how;
}
