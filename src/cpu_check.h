// cpu_check: the CPU features this build's -march needs, checked before anything else runs (a
// constructor in src/cpu_check.cc, compiled for plain x86-64), so a binary built with
// -march=x86-64-v3 says what the CPU lacks instead of dying with SIGILL.
#pragma once
#include <functional>
#include <string>
#include <vector>

// The names in `needed` (space separated, as the compiler's macros say them: "AVX2 FMA BMI2")
// for which `has` is false, in the order given.
std::vector<std::string> missing_cpu_features(const std::string& needed,
                                              const std::function<bool(const std::string&)>& has);
// "PROG: this CPU lacks AVX2 and FMA, which this build needs (built with -march=x86-64-v3);
// rebuild with make OPT=-O3"
std::string cpu_lacks_message(const std::string& program, const std::vector<std::string>& missing,
                              const std::string& march);
// True when this CPU has the feature (a name from the list above; unknown names: true).
bool cpu_has_feature(const std::string& name);
