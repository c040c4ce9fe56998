// mpi_timeout_report: ./launch --mpi's one line when a rank's collective watchdog ended the job
// (comm/backend_mpi.cc: "... timed out after S s (--comm-timeout T s) ...; ending the job with
// MPI_Abort"). Every live rank stuck in the collective prints such a line before the first
// MPI_Abort lands; the stopped rank prints none, or one saying its own watchdog woke late. From
// the ranks' stderr lines the launcher names the ranks that waited and the ones that did not.
// Pure: no I/O.
#pragma once
#include <set>
#include <string>

// What one rank's stderr text says about a collective timeout.
enum class MpiTimeoutLine { kNone, kWaited, kStopped };
MpiTimeoutLine classify_mpi_timeout_line(const std::string& text);

// The ranks' lines seen so far.
struct MpiTimeoutReports {
  std::set<int> waited;   // timed out waiting for a peer
  std::set<int> stopped;  // their own watchdog woke late: stopped or starved
  void add(int rank, const std::string& text);
  bool any() const { return !waited.empty() || !stopped.empty(); }
};

// "launch: a collective timed out (--comm-timeout): ranks 0, 1 waited for a peer; rank 2 did not
// (stopped or stalled); mpirun exited with status 1". np: the job's world size; how: mpirun's end
// ("exited with status 1"). "" when no rank reported a timeout.
std::string mpi_timeout_summary(const MpiTimeoutReports& r, int np, const std::string& how);
