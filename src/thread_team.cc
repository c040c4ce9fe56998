// thread_team: the compute threads of one rank (parts claimed through an atomic counter).
#include "src/thread_team.h"

#include <chrono>

namespace {
template <class Cond>
bool spin(Cond cond) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
  for (int i = 0;; ++i) {
    if (cond()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}
}  // namespace

ThreadTeam::ThreadTeam(int threads) : threads_count_(threads < 1 ? 1 : threads) {
  for (int i = 1; i < threads_count_; ++i) threads_.emplace_back([this] { loop(); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
    gen_.fetch_add(1);
  }
  go_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadTeam::run_parts(int parts, PartJob job, void* fn) {
  if (parts < 1) return;
  job_ = job;
  fn_ = fn;
  if (parts == 1 || threads_count_ == 1) {
    for (int p = 0; p < parts; ++p) job_(fn_, p);
    return;
  }
  remaining_.store(parts - 1);
  next_.store(uint64_t(parts) << 32 | 1);  // publishes job_ and fn_ to the claimers
  {
    std::lock_guard<std::mutex> lock(m_);
    gen_.fetch_add(1);
  }
  go_.notify_all();
  run_one(0);
  drain();
  if (!spin([this] { return remaining_.load() == 0; })) {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return remaining_.load() == 0; });
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(m_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

void ThreadTeam::run_one(int part) {
  try {
    job_(fn_, part);
  } catch (...) {
    std::lock_guard<std::mutex> lock(m_);
    if (!error_) error_ = std::current_exception();
  }
}

int ThreadTeam::claim() {
  uint64_t v = next_.load();
  for (;;) {
    const uint32_t part = uint32_t(v), parts = uint32_t(v >> 32);
    if (part >= parts) return -1;
    if (next_.compare_exchange_weak(v, v + 1)) return int(part);
  }
}

// Claims and runs parts until none is left.
void ThreadTeam::drain() {
  for (int p; (p = claim()) >= 0;) {
    run_one(p);
    if (remaining_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(m_);
      done_.notify_one();
    }
  }
}

void ThreadTeam::loop() {
  uint64_t seen = 0;
  for (;;) {
    if (!spin([&] { return gen_.load() != seen; })) {
      std::unique_lock<std::mutex> lock(m_);
      go_.wait(lock, [&] { return gen_.load() != seen; });
    }
    seen = gen_.load();
    if (stop_) return;
    drain();
  }
}
