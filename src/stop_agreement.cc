// stop_agreement: the one-collective vote on stopping (see stop_agreement.h).
#include "src/stop_agreement.h"

#include <csignal>

StopVote stop_vote_of(double term_ranks, double usr1_ranks) {
  StopVote v;
  if (term_ranks > 0) {
    v.signal = SIGTERM;
    v.ranks = int(term_ranks);
  } else if (usr1_ranks > 0) {
    v.signal = SIGUSR1;
    v.ranks = int(usr1_ranks);
  }
  return v;
}

StopVote agree_on_stop(Communicator& comm, int received) {
  double seen[2] = {received == SIGTERM ? 1.0 : 0.0, received == SIGUSR1 ? 1.0 : 0.0};
  if (comm.size() > 1) comm.allreduce_sum(seen, 2);
  return stop_vote_of(seen[0], seen[1]);
}
