// spin_choice: whether a rank waiting for its peers' bytes spins on the socket or sleeps in the
// kernel, adapted to what the machine does (Gloo's sync lane, comm/gloo_sync_lane.h). Spinning
// saves the wake-up when the rank's CPU would idle anyway; on a machine that is busier than its
// ranks (other work, more threads than CPUs) a spinning rank is preempted instead, and takes the
// CPU from someone who could work. So: spin while allowed and not preempted; after a round whose
// wait was preempted (an involuntary context switch of the waiting thread), sleep for a number of
// rounds that doubles with each such round (16, 32, ... 4096) and then try spinning again; a long
// run of clean spinning rounds (1024) brings the backoff back to 16. Pure.
#pragma once

class SpinChoice {
 public:
  static constexpr int kFirstBackoff = 16, kMaxBackoff = 4096, kCleanRoundsToReset = 1024;

  // allowed: the rank's threads have CPUs of their own (ThreadPolicy::spin_while_waiting);
  // without it the rank always sleeps.
  explicit SpinChoice(bool allowed) : allowed_(allowed), spinning_(allowed) {}
  bool spinning() const { return spinning_; }
  bool allowed() const { return allowed_; }
  // One round's wait is over; preempted: the waiting thread was switched out involuntarily during
  // it. Returns true when spinning() changed.
  bool after_round(bool preempted);

 private:
  bool allowed_, spinning_;
  int backoff_ = kFirstBackoff;  // rounds to sleep after the next preempted spin
  int sleep_left_ = 0;           // rounds still to sleep
  int clean_ = 0;                // spinning rounds since the last preemption
};
