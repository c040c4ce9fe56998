// blacklist_cooldown: Horovod's --blacklist-cooldown-range MIN MAX, pure. A blacklisted host of an
// elastic job gets ranks again once its cooldown is over; its nth blacklisting lasts
// MIN * 2^n + U * MIN seconds (U uniform in [0, 1)), clamped to [MIN, MAX] (Horovod's HostState).
// Without the flag a blacklisted host stays out for the rest of the job.
#pragma once
#include <string>

struct CooldownRange {
  int min_s = 0;  // 0: not given (no cooldown)
  int max_s = 0;
  bool given() const { return min_s > 0; }
};

// Horovod's bounds: MIN at least 1 s, MAX at most one hour.
constexpr int kCooldownFloorS = 1;
constexpr int kCooldownCeilingS = 3600;

// The flag's two words. Throws UsageError (launcher/options.h) with one line naming the flag for a
// word that is not a whole number, a value outside 1..3600 or MIN > MAX.
CooldownRange parse_cooldown_range(const std::string& min_word, const std::string& max_word);

// Seconds of a host's nth blacklisting (n >= 1) for u in [0, 1).
double cooldown_seconds(const CooldownRange& r, int n, double u);

// "2.7": a cooldown's seconds as the launcher's lines show them.
std::string cooldown_seconds_text(double s);

// "--blacklist-cooldown-range 60 300"
std::string cooldown_flag_text(const CooldownRange& r);
