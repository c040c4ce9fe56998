// timeline_lanes: the report's lane chart of one optimizer step from a ./train --timeline file —
// one lane per (rank, thread track) grouped by rank, each slice of the step a <rect> coloured by
// its kind (batch read, forward, backward, allreduce, algorithm steps, --overlap on's bucket
// exchanges, optimizer step) with a <title> of its args, our allreduce algorithms' flow events as
// arrows from sender to receiver, a time axis in microseconds on rank 0's clock and a legend.
// Pure: Timeline in, SVG text out.
#pragma once
#include <string>

#include "reporting/timeline_reader.h"

// The step drawn when none is asked for: of the recorded steps after the first, the one whose
// slices span the median time (the first step when it is the only one); -1 for no steps.
long default_lane_step(const Timeline& t);

// <svg id="timeline-lanes"> for step (which must be one of recorded_steps(t)).
std::string timeline_lanes_svg(const Timeline& t, long step);
