// collective_watchdog: see the header. begin and end are a lock and a few assignments; begin wakes
// the thread only when it sleeps without a deadline (no call was open when it last looked). While
// calls follow each other the thread sleeps until the deadline of the call it last saw and then
// re-arms for the open one: about one wake per timeout, however many calls run.
#include "comm/collective_watchdog.h"

#include <utility>

CollectiveWatchdog::CollectiveWatchdog(std::chrono::milliseconds timeout, Expired on_expired)
    : timeout_(timeout), on_expired_(std::move(on_expired)) {
  thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CollectiveWatchdog::begin(std::string name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    name_ = std::move(name);
    started_ = Clock::now();
    open_ = true;
    ++calls_;
    if (!idle_) return;  // the thread wakes at an earlier deadline and re-arms for this call
  }
  cv_.notify_one();
}

void CollectiveWatchdog::end() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = false;  // the thread wakes at the old deadline, sees no open call, and sleeps again
}

unsigned long long CollectiveWatchdog::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

// Sleeps until a call is open, then until its deadline; a call still open (the same one: the
// count did not move) at its deadline has expired. After the callback the thread stops watching.
void CollectiveWatchdog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!open_) {
      idle_ = true;
      cv_.wait(lock, [&] { return stopping_ || open_; });
      idle_ = false;
      continue;
    }
    const unsigned long long call = calls_;
    const Clock::time_point deadline = started_ + timeout_;
    cv_.wait_until(lock, deadline, [&] { return stopping_ || !open_ || calls_ != call; });
    if (stopping_ || !open_ || calls_ != call || Clock::now() < deadline) continue;
    const std::string name = name_;
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - started_).count();
    const double late = std::chrono::duration<double>(now - deadline).count();
    lock.unlock();
    on_expired_(name, seconds, late);
    lock.lock();
    return;
  }
}
