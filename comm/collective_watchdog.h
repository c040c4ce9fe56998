// collective_watchdog: a deadline on every collective a backend without timeouts of its own runs
// (MPI's blocking calls cannot be interrupted). The backend brackets each call with begin(name)
// and end(); a thread of the watchdog's own sleeps on a condition variable until the open call's
// deadline (or forever while none is open) and, when a call is still open at its deadline, calls
// on_expired(name, seconds the call has run, seconds past its deadline the thread woke) once. A
// thread that wakes well past the deadline was not running: its process was stopped (SIGSTOP) or
// starved, so the late peer is this rank itself. No MPI here: the backend's callback decides
// what to do (comm/backend_mpi.cc prints its line and ends the job with MPI_Abort).
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

class CollectiveWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using Expired = std::function<void(const std::string& name, double seconds, double late)>;

  // Starts the thread. timeout > 0.
  CollectiveWatchdog(std::chrono::milliseconds timeout, Expired on_expired);
  // Stops and joins the thread (an open call is forgotten).
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // A call named `name` starts now; its deadline is now + timeout. Calls do not nest: begin
  // replaces an open call.
  void begin(std::string name);
  // The open call finished.
  void end();
  // Calls begun so far (for tests and the expiry line).
  unsigned long long calls() const;

 private:
  void run();

  const std::chrono::milliseconds timeout_;
  const Expired on_expired_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false, stopping_ = false;
  bool idle_ = false;  // the thread sleeps without a deadline: begin must wake it
  std::string name_;
  Clock::time_point started_;
  unsigned long long calls_ = 0;
  std::thread thread_;
};

// Brackets one call for the scope's lifetime: begin at construction, end at destruction (also on
// an exception). A null watchdog brackets nothing.
class WatchedCall {
 public:
  WatchedCall(CollectiveWatchdog* w, std::string name) : w_(w) {
    if (w_) w_->begin(std::move(name));
  }
  ~WatchedCall() {
    if (w_) w_->end();
  }
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  CollectiveWatchdog* w_;
};
