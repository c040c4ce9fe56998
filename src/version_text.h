// version_text: what `--version` prints for baresgd's programs, one fact a line:
// "baresgd-train 0.3.0", then the communication backends this build has ("backends: gloo mpi";
// only for the programs that use them: ./report links none and prints no such line) and the CPU
// it was built for ("built for: -march=x86-64-v3").
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

// program: "train", "launch" or "report"; uses_backends: false for a program that links no backend.
inline std::string version_text(const std::string& program, bool uses_backends = true) {
  std::string cpu = BARESGD_CPU_MARCH;
  return "baresgd-" + program + " " + kBaresgdVersion + "\n" +
         (uses_backends ? "backends: " + built_backends() + "\n" : std::string()) +
         "built for: " + (cpu.empty() ? std::string("the compiler's default x86-64") : cpu) + "\n";
}
