// stop_signal: SIGTERM and SIGUSR1 ask ./train to stop at a saved step (what Slurm sends at a time
// limit, on scancel and before preemption, and what ./launch forwards). The handler only records
// the signal (a sig_atomic_t); the Trainer asks at each step boundary, and the ranks agree on it
// (src/stop_agreement.h), so every rank stops at the same step and rank 0 saves it.
//
// A second signal exits at once: the handler puts the signal's default action back and raises it,
// so the rank dies of it (no checkpoint, the temp file of a write in progress is removed by the
// next run). A repeat that comes within the echo window of the first is the same stop, not a
// second one: at a time limit Slurm signals every process of the job (./launch, its agents, srun
// and the ranks), and ./launch and srun forward what they get, so one stop reaches a rank two or
// three times within milliseconds.
#pragma once
#include <cstdint>
#include <string>

// The echo window (milliseconds) unless BARESGD_SIGNAL_ECHO_MS says otherwise.
constexpr int64_t kSignalEchoWindowMs = 1000;

// Pure: is a signal that arrives at now_ns (CLOCK_MONOTONIC) a second signal, the first having
// come at first_ns? True once window_ms have passed since the first.
inline bool is_second_signal(int64_t first_ns, int64_t now_ns, int64_t window_ms) {
  return now_ns - first_ns >= window_ms * 1000000;
}

// Installs the handler for SIGTERM and SIGUSR1 (SA_RESTART: a collective in progress goes on).
// BARESGD_SIGNAL_ECHO_MS (0 .. 600000) replaces the echo window; throws std::runtime_error naming
// the variable when it is not a whole number in that range.
void install_stop_signal_handlers();

// The first stop signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal_received();

// "SIGTERM", "SIGUSR1".
std::string stop_signal_name(int sig);

// The test hook BARESGD_TEST_STOP_AT=RANK:STEP: that rank stops itself (SIGSTOP) before the vote of
// step STEP, so a test can signal it at a known step and continue it (SIGCONT); continued, it waits
// (10 s at most) until its handler took that signal. Pure parse: false when text is not two whole
// numbers "R:S".
struct TestPause {
  bool active = false;
  int rank = 0;
  uint64_t step = 0;
};
bool parse_test_pause(const std::string& text, TestPause* out);
// From the environment; throws std::runtime_error naming the variable when it does not parse.
TestPause test_pause_from_environment();
// SIGSTOP to this process when the pause is this rank's at this step.
void maybe_pause_for_test(const TestPause& p, int rank, uint64_t step);
