// torchrun_env: RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK / MASTER_ADDR /
// MASTER_PORT, validated strictly (see torchrun_env.h).
#include "comm/torchrun_env.h"
#include "src/parse_int.h"
#include "src/shown_text.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("torchrun environment: " + msg); }

// NAME='value' with control bytes shown as \xNN, so the message stays one line.
std::string shown(const char* name, const char* v) { return std::string(name) + "='" + shown_text(v ? v : "") + "'"; }

std::string nv(const char* name, long long v) { return std::string(name) + "=" + std::to_string(v); }

// Strict decimal: digits only (no sign, spaces or '+'), fits in an int.
int integer(const EnvLookup& get, const char* name) {
  const char* v = get(name);
  if (!v) fail(std::string(name) + " is not set");
  long long x = 0;
  switch (parse_decimal(v, IntSign::kNone, 0, INT_MAX, &x)) {
    case IntText::kOk:
      return static_cast<int>(x);
    case IntText::kEmpty:
      fail(shown(name, v) + " is not an integer");
    case IntText::kNotDigits:
      fail(shown(name, v) + " is not a non-negative integer");
    case IntText::kOutOfRange:
      break;
  }
  fail(shown(name, v) + " is out of range for an int");
}

void check_below(const char* name, int v, const char* bound_name, int bound) {
  if (v >= bound) fail(nv(name, v) + " must be < " + nv(bound_name, bound));
}

}  // namespace

bool torchrun_env_present(const EnvLookup& get) { return get("RANK") || get("WORLD_SIZE") || get("LOCAL_RANK"); }

namespace {

// LOCAL_RANK / LOCAL_WORLD_SIZE (both or neither; neither: one node).
void read_local(const EnvLookup& get, RankInfo* r) {
  if (!get("LOCAL_RANK") && !get("LOCAL_WORLD_SIZE")) {
    r->local_rank = r->rank;
    r->local_size = r->size;
    return;
  }
  if (!get("LOCAL_RANK") || !get("LOCAL_WORLD_SIZE"))
    fail(std::string(get("LOCAL_RANK") ? "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not"
                                       : "LOCAL_WORLD_SIZE is set but LOCAL_RANK is not"));
  r->local_size = integer(get, "LOCAL_WORLD_SIZE");
  if (r->local_size < 1) fail(nv("LOCAL_WORLD_SIZE", r->local_size) + " must be >= 1");
  if (r->local_size > r->size)
    fail(nv("LOCAL_WORLD_SIZE", r->local_size) + " is larger than " + nv("WORLD_SIZE", r->size));
  r->local_rank = integer(get, "LOCAL_RANK");
  check_below("LOCAL_RANK", r->local_rank, "LOCAL_WORLD_SIZE", r->local_size);
  if (r->local_rank > r->rank) fail(nv("LOCAL_RANK", r->local_rank) + " is larger than " + nv("RANK", r->rank));
}

// torchrun gives every node the same number of workers: GROUP_RANK is the node's index.
void read_cross(const EnvLookup& get, RankInfo* r) {
  const bool even = r->size % r->local_size == 0;
  r->cross_size = even ? r->size / r->local_size : -1;
  r->cross_rank = even ? r->rank / r->local_size : -1;
  if (get("GROUP_RANK")) {
    int group = integer(get, "GROUP_RANK");
    if (even && group != r->cross_rank)
      fail(nv("GROUP_RANK", group) + " does not match " + nv("RANK", r->rank) + " / " +
           nv("LOCAL_WORLD_SIZE", r->local_size) + " (node " + std::to_string(r->cross_rank) + ")");
  }
  if (!even) r->cross_rank = r->cross_size = -1;  // computed after connecting
}

// Who serves the c10d store at MASTER_ADDR:MASTER_PORT. torchrun's agent does when its rendezvous
// is static (--master_addr/--master_port): TORCHELASTIC_USE_AGENT_STORE=True. With --standalone or
// --rdzv_backend c10d the agent's store is its rendezvous's (elsewhere) and it sets "False": the
// worker of global rank 0 serves the store and the others connect, as PyTorch's workers do. Unset
// (MASTER_ADDR, RANK and WORLD_SIZE given by hand, PyTorch's env://) also means rank 0 serves it.
void read_agent_store(const EnvLookup& get, RankInfo* r) {
  const char* v = get("TORCHELASTIC_USE_AGENT_STORE");
  if (v && std::string(v) != "True" && std::string(v) != "False")
    fail(shown("TORCHELASTIC_USE_AGENT_STORE", v) + " is neither True nor False (" + nv("RANK", r->rank) + ")");
  r->c10d_store_on_rank0 = !v || std::string(v) == "False";
}

// MASTER_ADDR:MASTER_PORT, torchrun's c10d store (not needed by a world of one without them).
void read_master(const EnvLookup& get, RankInfo* r) {
  if (r->size == 1 && !get("MASTER_ADDR") && !get("MASTER_PORT")) return;
  const char* addr = get("MASTER_ADDR");
  if (!addr || !*addr)
    fail(std::string(addr ? "MASTER_ADDR is empty" : "MASTER_ADDR is not set") + " (" + nv("WORLD_SIZE", r->size) +
         ", " + nv("RANK", r->rank) + ")");
  for (const char* p = addr; *p; ++p)
    if (static_cast<unsigned char>(*p) <= 0x20 || *p == 0x7f) fail(shown("MASTER_ADDR", addr) + " is not a host name");
  if (!get("MASTER_PORT"))
    fail(std::string("MASTER_PORT is not set (") + shown("MASTER_ADDR", addr) + ", " + nv("WORLD_SIZE", r->size) + ")");
  int port = integer(get, "MASTER_PORT");
  if (port < 1 || port > 65535) fail(nv("MASTER_PORT", port) + " is not a port (1..65535)");
  std::string host = addr;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  r->c10d_store_addr = host + ":" + std::to_string(port);
  read_agent_store(get, r);
}

}  // namespace

void read_torchrun_env(const EnvLookup& get, RankInfo* r) {
  r->source = "torchrun";
  r->backend = "gloo";
  if (!get("RANK") || !get("WORLD_SIZE"))
    fail(std::string(get("RANK")         ? "RANK is set but WORLD_SIZE is not"
                     : get("WORLD_SIZE") ? "WORLD_SIZE is set but RANK is not"
                                         : "LOCAL_RANK is set but RANK and WORLD_SIZE are not"));
  r->size = integer(get, "WORLD_SIZE");
  if (r->size < 1) fail(nv("WORLD_SIZE", r->size) + " must be >= 1");
  r->rank = integer(get, "RANK");
  check_below("RANK", r->rank, "WORLD_SIZE", r->size);
  read_local(get, r);
  read_cross(get, r);
  // The keys in torchrun's store are this run's and this restart's: a restarted worker group
  // (TORCHELASTIC_RESTART_COUNT) never meets the registrations of the group it replaces.
  if (get("TORCHELASTIC_RUN_ID") && *get("TORCHELASTIC_RUN_ID") && !get("BARESGD_JOB_ID")) {
    r->job_id = std::string("torchrun-") + get("TORCHELASTIC_RUN_ID");
    if (get("TORCHELASTIC_RESTART_COUNT") && *get("TORCHELASTIC_RESTART_COUNT"))
      r->job_id += "." + std::to_string(integer(get, "TORCHELASTIC_RESTART_COUNT"));
  }
  read_master(get, r);
}
