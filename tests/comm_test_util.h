// comm_test_util: helpers for tests/test_comm.cc: a temp directory, W in-process Gloo ranks
// (threads), and W tool processes started together with their own environments.
#pragma once
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_internal.h"
#include "launcher/mpirun.h"
#include "tests/test_util.h"

extern char** environ;

namespace commtest {

class TempDir {
 public:
  explicit TempDir(const std::string& tag) : path_(testutil::make_temp_dir("comm-" + tag)) {}
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using testutil::read_file;

inline std::string unique_job(const std::string& tag) {
  static std::atomic<int> n{0};
  return tag + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

// ---- In-process ranks: W threads, each with its own Gloo communicator over a FileStore. ----

struct ThreadResult {
  std::vector<std::string> errors;  // per rank: "" or the exception message
  bool any_error() const {
    for (const auto& e : errors)
      if (!e.empty()) return true;
    return false;
  }
};

inline RankInfo thread_rank_info(int rank, int size, const std::string& job) {
  RankInfo info;
  info.rank = rank;
  info.size = size;
  info.local_rank = rank;
  info.local_size = size;
  info.cross_rank = 0;
  info.cross_size = 1;
  info.backend = "gloo";
  info.source = "launch";
  info.hostname = "localhost";
  info.host_addr = "127.0.0.1";
  info.job_id = job;
  return info;
}

#if BARESGD_HAVE_GLOO
// Runs body(comm) on `size` threads; `ranks` limits which ranks are started (default all).
inline ThreadResult run_gloo_threads(int size, const std::function<void(Communicator&)>& body, CommOptions opts,
                                     std::vector<int> ranks = {},
                                     const std::function<void(RankInfo&)>& tweak = nullptr) {
  TempDir dir("gloo");
  opts.rendezvous_dir = dir.path();
  const std::string job = unique_job("threads");
  if (ranks.empty())
    for (int r = 0; r < size; ++r) ranks.push_back(r);
  ThreadResult res;
  res.errors.resize(ranks.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < ranks.size(); ++k) {
    threads.emplace_back([&, k] {
      try {
        RankInfo info = thread_rank_info(ranks[k], size, job);
        if (tweak) tweak(info);
        auto comm = make_gloo_communicator(info, opts);
        body(*comm);
      } catch (const std::exception& e) {
        res.errors[k] = e.what();
        if (res.errors[k].empty()) res.errors[k] = "(empty exception message)";
      }
    });
  }
  for (auto& t : threads) t.join();
  return res;
}
#endif

// ---- Processes. ----

inline bool starts_with(const std::string& s, const char* p) { return s.compare(0, std::strlen(p), p) == 0; }

// The current environment without anything that would make a child think it is a rank.
inline std::vector<std::string> clean_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (starts_with(kv, "BARESGD_RANK") || starts_with(kv, "BARESGD_SIZE") || starts_with(kv, "BARESGD_LOCAL_") ||
        starts_with(kv, "BARESGD_CROSS_") || starts_with(kv, "BARESGD_COMM") || starts_with(kv, "BARESGD_HOST") ||
        starts_with(kv, "BARESGD_STORE_ADDR") || starts_with(kv, "BARESGD_SECRET") ||
        starts_with(kv, "BARESGD_JOB_ID") || starts_with(kv, "OMPI_") || starts_with(kv, "SLURM_") ||
        starts_with(kv, "PMI") || starts_with(kv, "PMIX_"))
      continue;
    env.push_back(kv);
  }
  // Open MPI: loopback only, no shared-memory BTL (docs/testing.md), as the launcher pins it.
  for (const auto& [name, value] : loopback_openmpi_env()) env.push_back(name + "=" + value);
  return env;
}

using testutil::ProcResult;
using testutil::RunAll;

struct ProcSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // extra KEY=VALUE entries on top of clean_environment()
};

// testutil::run_processes with each process's environment = clean_environment() + its extras.
inline RunAll run_processes(const std::vector<ProcSpec>& specs, double timeout_s = 60) {
  std::vector<testutil::ProcSpec> full;
  for (const ProcSpec& s : specs) {
    std::vector<std::string> env = clean_environment();
    env.insert(env.end(), s.env.begin(), s.env.end());
    full.push_back({s.argv, env});
  }
  return testutil::run_processes(full, timeout_s);
}

inline std::string dir_of_self() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// build/tests/tool_comm_worker (BARESGD_TOOLS from `make test`, else next to this test binary).
inline std::string tool_path() {
  const char* d = std::getenv("BARESGD_TOOLS");
  return std::string(d && *d ? d : dir_of_self().c_str()) + "/tool_comm_worker";
}

inline std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(ss, d, ':')) {
    std::string p = d + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

}  // namespace commtest
