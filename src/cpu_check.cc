// cpu_check: refuses to start on a CPU without the features the build's -march needs, with one
// line naming them. Compiled without -march (plain x86-64): it must run on any x86-64 CPU.
// The Makefile passes BARESGD_CPU_NEEDS ("AVX AVX2 FMA ...", from the compiler's predefined
// macros for the build's flags) and BARESGD_CPU_MARCH ("-march=x86-64-v3").
#include "src/cpu_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <sstream>

#ifndef BARESGD_CPU_NEEDS
#define BARESGD_CPU_NEEDS ""
#endif
#ifndef BARESGD_CPU_MARCH
#define BARESGD_CPU_MARCH ""
#endif

std::vector<std::string> missing_cpu_features(const std::string& needed,
                                              const std::function<bool(const std::string&)>& has) {
  std::vector<std::string> missing;
  std::istringstream in(needed);
  for (std::string f; in >> f;)
    if (!has(f)) missing.push_back(f);
  return missing;
}

std::string cpu_lacks_message(const std::string& program, const std::vector<std::string>& missing,
                              const std::string& march) {
  std::string list;
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i > 0) list += i + 1 == missing.size() ? " and " : ", ";
    list += missing[i];
  }
  return program + ": this CPU lacks " + list + ", which this build needs (built with " +
         (march.empty() ? std::string("these CPU flags") : march) + "); rebuild with make OPT=-O3";
}

bool cpu_has_feature(const std::string& f) {
  __builtin_cpu_init();
  if (f == "AVX") return __builtin_cpu_supports("avx");
  if (f == "AVX2") return __builtin_cpu_supports("avx2");
  if (f == "FMA") return __builtin_cpu_supports("fma");
  if (f == "BMI") return __builtin_cpu_supports("bmi");
  if (f == "BMI2") return __builtin_cpu_supports("bmi2");
  if (f == "F16C") return __builtin_cpu_supports("f16c");
  if (f == "LZCNT") return __builtin_cpu_supports("lzcnt");
  if (f == "MOVBE") return __builtin_cpu_supports("movbe");
  if (f == "POPCNT") return __builtin_cpu_supports("popcnt");
  if (f == "XSAVE") return __builtin_cpu_supports("xsave");
  if (f == "SSE3") return __builtin_cpu_supports("sse3");
  if (f == "SSSE3") return __builtin_cpu_supports("ssse3");
  if (f == "SSE4_1") return __builtin_cpu_supports("sse4.1");
  if (f == "SSE4_2") return __builtin_cpu_supports("sse4.2");
  if (f == "AVX512F") return __builtin_cpu_supports("avx512f");
  return true;
}

namespace {

// Priority 101: before every other constructor of the program (all default priority), which
// were compiled with the build's -march and may already use its instructions.
__attribute__((constructor(101))) void check_cpu_at_start() {
  std::vector<std::string> missing = missing_cpu_features(BARESGD_CPU_NEEDS, cpu_has_feature);
  if (missing.empty()) return;
  std::string line = cpu_lacks_message(program_invocation_short_name, missing, BARESGD_CPU_MARCH) + "\n";
  (void)!::write(2, line.data(), line.size());
  ::_exit(1);
}

}  // namespace
