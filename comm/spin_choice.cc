// spin_choice: the spin-or-sleep decision of a waiting rank (see spin_choice.h).
#include "comm/spin_choice.h"

#include <algorithm>

bool SpinChoice::after_round(bool preempted) {
  if (!allowed_) return false;
  if (!spinning_) {
    if (--sleep_left_ > 0) return false;
    spinning_ = true;
    clean_ = 0;
    return true;
  }
  if (!preempted) {
    if (++clean_ >= kCleanRoundsToReset) {
      backoff_ = kFirstBackoff;
      clean_ = 0;
    }
    return false;
  }
  spinning_ = false;
  sleep_left_ = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  clean_ = 0;
  return true;
}
