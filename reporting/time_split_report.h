// time_split_report: the report's sections on where a step's time went and who was late, from
// the --metrics step records: the per-rank split (data, compute, and the exchange's transfer,
// wait and descheduled, src/comm_split.h's one definition), marked when ranks outnumbered a
// host's CPUs; and the arrival-order strip (each logged step's ranks in the order they reached
// the gradient exchange, on rank 0's clock), naming the rank that most often arrived last.
#pragma once
#include <string>
#include <vector>

#include "reporting/metrics_reader.h"

// How often each rank arrived last at the gradient exchange over the logged steps that recorded
// arrivals (ties: the lower rank); most_often_last is -1 when there were none.
struct ArrivalTally {
  int steps = 0;
  std::vector<int> last_count;        // per rank
  std::vector<double> mean_arrive_s;  // per rank: mean arrive_s (after the first rank)
  int most_often_last = -1;
};
ArrivalTally tally_arrivals(const Metrics& m);

// <section> "Where a step's time goes, per rank" (the chart id step-time-chart).
std::string step_split_section(const Metrics& m);
// <section id="arrivals"> "Who was late": the strip (arrival-strip) and the named rank (last-to-arrive).
std::string arrival_section(const Metrics& m);
