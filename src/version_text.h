// version_text: what `--version` prints for baresgd's programs: "baresgd-train 0.3.0", then the
// communication backends this build has and the CPU it was built for (help2man reads line one).
#pragma once
#include <string>

#include "src/version.h"

#ifndef BARESGD_CPU_MARCH
#define BARESGD_CPU_MARCH ""
#endif

// The backends built in, as `make` prints them: "gloo mpi", "gloo", "mpi" or "none".
inline std::string built_backends() {
  std::string b;
#if BARESGD_HAVE_GLOO
  b += "gloo";
#endif
#if BARESGD_HAVE_MPI
  b += b.empty() ? "mpi" : " mpi";
#endif
  return b.empty() ? "none (single process only)" : b;
}

// program: "train", "launch" or "report".
inline std::string version_text(const std::string& program) {
  std::string cpu = BARESGD_CPU_MARCH;
  return "baresgd-" + program + " " + kBaresgdVersion + "\n" + "backends: " + built_backends() + "\n" +
         "built for: " + (cpu.empty() ? std::string("the compiler's default x86-64") : cpu) + "\n";
}
