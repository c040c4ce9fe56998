// memory_budget: physical pages and RLIMIT_AS minus this process's mapped size (/proc/self/statm).
#include "src/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace {

uint64_t mapped_bytes() {
  unsigned long long pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return uint64_t(pages) * uint64_t(sysconf(_SC_PAGESIZE));
}

}  // namespace

MemoryBudget memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  MemoryBudget b{pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX, "RAM"};
  struct rlimit r;
  if (::getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    const uint64_t used = mapped_bytes(), limit = uint64_t(r.rlim_cur);
    const uint64_t left = limit > used ? limit - used : 0;
    if (left < b.bytes) b = {left, "ulimit -v " + bytes_text(limit) + " (" + bytes_text(used) + " mapped already)"};
  }
  return b;
}

std::string bytes_text(uint64_t bytes) {
  const char* unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, unit[u]);
  return buf;
}
