// algorithm_steps: the report's small multiples of one allreduce call of our algorithms (ring,
// halving-doubling, direct) from a ./train --timeline file — one panel per algorithm step. The
// ranks sit on a ring (ring, direct: rank r's right neighbour r+1 clockwise) or on the corners of a
// hypercube (halving-doubling: level j's pairs r, r^2^j joined along dimension j); every message
// of the step is an arrow from sender to receiver in its phase's colour, labelled with the chunk
// it carries; beside each rank a strip of the vector's pieces shows the partial sums it holds
// after the step (shade: how many ranks' values are summed in its copy; dark: all of them). The
// first panel is the start, every rank holding only its own gradient. Pure: Timeline in, SVG out.
#pragma once
#include <string>

#include "reporting/timeline_reader.h"

// The colour of an algorithm phase ("reduce-scatter", "allgather", "fold", "unfold", "exchange"),
// the same in the lane chart and the panels.
const char* phase_color(const std::string& phase);

// <svg id="algorithm-steps"> for the first call of our algorithms in `step` of the timeline, or
// "" when the step holds no algorithm step slices (a backend's own allreduce, Adasum).
std::string algorithm_steps_svg(const Timeline& t, long step);
