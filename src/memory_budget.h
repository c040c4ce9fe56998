// memory_budget: the memory one rank can count on before it allocates its batch buffers — the
// machine's RAM, and under an address-space limit (ulimit -v) what is left of it — so a
// --batch-size that cannot fit is refused with what it needs instead of swapping or dying.
#pragma once
#include <cstdint>
#include <string>

struct MemoryBudget {
  uint64_t bytes;
  std::string what;  // "RAM" or "ulimit -v"
};
MemoryBudget memory_budget();

// "1.4 GiB", "512.0 MiB", "20.0 KiB".
std::string bytes_text(uint64_t bytes);
