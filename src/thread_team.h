// thread_team: the compute threads of one rank. run(parts, fn) calls fn(part) once for every part
// 0..parts-1 and returns when all are done: part 0 on the calling thread, the others on whoever
// claims them first (the team's threads, or the caller once its part 0 is done), so a thread that
// has not been scheduled yet (a loaded machine) costs nothing. Whoever runs part p, fn(p) does the
// same work, so results never depend on who ran what. Waiting spins briefly (a step comes every
// fraction of a millisecond), then sleeps. The first exception a part throws is rethrown by run.
#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

class ThreadTeam {
 public:
  // threads >= 1: the caller plus threads - 1 more.
  explicit ThreadTeam(int threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;
  int threads() const { return threads_count_; }

  template <class Fn>
  void run(int parts, Fn&& fn) {
    run_parts(
        parts, [](void* f, int part) { (*static_cast<Fn*>(f))(part); }, &fn);
  }

 private:
  using PartJob = void (*)(void* fn, int part);
  void run_parts(int parts, PartJob job, void* fn);
  int claim();  // a part of the running job nobody has claimed yet, or -1
  void run_one(int part);
  void drain();
  void loop();

  const int threads_count_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable go_, done_;
  std::atomic<uint64_t> gen_{0};
  // The running job's parts << 32 | the next part to claim: claims compare the two in one word,
  // so a thread that wakes late can never claim a part of a job that has none left.
  std::atomic<uint64_t> next_{0};
  std::atomic<int> remaining_{0};  // parts 1.. not finished yet
  bool stop_ = false;
  PartJob job_ = nullptr;
  void* fn_ = nullptr;
  std::exception_ptr error_;  // the first part's exception, under m_
};
