// what_if_spec: the values of ./train's what-if switches, parsed (pure, fuzzed by
// tests/fuzz/fuzz_what_if_spec.cc): --straggler RANK:MS or RANK:xFACTOR (one rank's compute made
// slower), --link-delay MS and --link-bandwidth RATE (every message of our allreduce algorithms
// held as a link of that latency and rate would hold it: comm/emulated_link.h).
#pragma once
#include <string>

struct StragglerSpec {
  int rank = -1;        // -1: off
  double sleep_ms = 0;  // RANK:MS: sleep this long in each step, after backward
  double factor = 0;    // RANK:xF: sleep (F - 1) x this step's compute time instead (F > 1)
  bool active() const { return rank >= 0; }
};

// "2:5" (rank 2 sleeps 5 ms a step), "2:x3" (rank 2's compute takes 3x as long). Rank 0..65535,
// MS in [0, 60000] (decimals allowed), F in (1, 1000]. Throws std::invalid_argument with the
// reason ("expected RANK:MS or RANK:xFACTOR", ...); the caller names the flag.
StragglerSpec parse_straggler(const std::string& text);

// Milliseconds in [0, 10000], decimals allowed ("0.5", "2"). Throws std::invalid_argument.
double parse_link_delay_ms(const std::string& text);

// A link rate as bytes per second: a decimal number and a unit, bits (bit, kbit, Mbit, Gbit, each
// optionally "/s" or "ps": 1 kbit = 1000 bit) or bytes (B/s, kB/s, MB/s, GB/s; "K" for "k"
// too). "100Mbit" = 12,500,000 B/s, "10MB/s" = 10,000,000 B/s. Between 1 B/s and 1e12 B/s.
// Throws std::invalid_argument naming what is wrong.
double parse_link_rate(const std::string& text);
