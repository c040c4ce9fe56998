// fd_limit: raise the soft open-file limit, refuse a job the hard limit cannot hold (fd_limit.h).
#include "launcher/fd_limit.h"

#include <sys/resource.h>

long fds_needed(int ranks) { return kFdsPerRank * long(ranks) + kFdsOwn; }

std::string fd_limit_refusal(int ranks, long need, long hard) {
  if (hard >= need) return "";
  return "launch: " + std::to_string(ranks) + " ranks need about " + std::to_string(need) + " open files (" +
         std::to_string(kFdsPerRank) + " per rank + " + std::to_string(kFdsOwn) + ") but the hard limit is " +
         std::to_string(hard) + " (ulimit -Hn): raise it (nofile in /etc/security/limits.conf, or LimitNOFILE) " +
         "or start fewer ranks from this launcher";
}

std::string raise_fd_limit(int ranks) {
  struct rlimit lim;
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return "";
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  const long hard = lim.rlim_max == RLIM_INFINITY ? (1L << 30) : long(lim.rlim_max);
  return fd_limit_refusal(ranks, fds_needed(ranks), hard);
}
