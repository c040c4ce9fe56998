// library_versions: the build's backends (mpi_library_version lives in backend_mpi.cc, the only
// file that includes MPI's header; this file supplies it when MPI is not built in).
#include "comm/library_versions.h"

bool built_with_gloo() {
#if BARESGD_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

bool built_with_mpi() {
#if BARESGD_HAVE_MPI
  return true;
#else
  return false;
#endif
}

#if !BARESGD_HAVE_MPI
std::string mpi_library_version() { return ""; }
#endif
