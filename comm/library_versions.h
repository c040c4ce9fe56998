// library_versions: which communication libraries this build has, and the MPI library's own
// version line (recorded in the --metrics header).
#pragma once
#include <string>

bool built_with_gloo();
bool built_with_mpi();
// MPI_Get_library_version's first line, e.g. "Open MPI v4.1.4, package: Debian OpenMPI, ...";
// "" in a build without MPI.
std::string mpi_library_version();
