// stop_signal: the SIGTERM/SIGUSR1 handler and the test pause (see stop_signal.h).
#include "src/stop_signal.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "src/parse_int.h"

namespace {

volatile sig_atomic_t g_first_signal = 0;
// The first signal's arrival (CLOCK_MONOTONIC ns) and the echo window; written before any handler
// runs (the window) or only by the handler (the arrival), which runs once at a time (sa_mask).
int64_t g_first_ns = 0;
int64_t g_echo_window_ms = kSignalEchoWindowMs;

int64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Async-signal-safe: a flag and a clock read for the first signal; for a second one a line by
// write(2), the default action back, and the signal raised again (the rank dies of it).
void on_stop_signal(int sig) {
  const int saved = errno;
  const int64_t now = monotonic_ns();
  if (g_first_signal == 0) {
    g_first_ns = now;
    g_first_signal = sig;
  } else if (is_second_signal(g_first_ns, now, g_echo_window_ms)) {
    static const char kLine[] = "train: a second stop signal: exiting at once, without saving\n";
    ssize_t ignored = write(2, kLine, sizeof kLine - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
  }
  errno = saved;
}

int64_t echo_window_from_environment() {
  const char* v = std::getenv("BARESGD_SIGNAL_ECHO_MS");
  if (!v) return kSignalEchoWindowMs;
  long long ms = 0;
  if (parse_decimal(v, IntSign::kNone, 0, 600000, &ms) != IntText::kOk)
    throw std::runtime_error("BARESGD_SIGNAL_ECHO_MS='" + std::string(v) +
                             "' is not a whole number of milliseconds from 0 to 600000");
  return ms;
}

}  // namespace

void install_stop_signal_handlers() {
  g_echo_window_ms = echo_window_from_environment();
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGUSR1);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

int stop_signal_received() { return g_first_signal; }

std::string stop_signal_name(int sig) {
  if (sig == SIGTERM) return "SIGTERM";
  if (sig == SIGUSR1) return "SIGUSR1";
  return "signal " + std::to_string(sig);
}

bool parse_test_pause(const std::string& text, TestPause* out) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  long long rank = 0, step = 0;
  if (parse_decimal(text.substr(0, colon), IntSign::kNone, 0, 1 << 20, &rank) != IntText::kOk ||
      parse_decimal(text.substr(colon + 1), IntSign::kNone, 0, 1LL << 40, &step) != IntText::kOk)
    return false;
  out->active = true;
  out->rank = int(rank);
  out->step = uint64_t(step);
  return true;
}

TestPause test_pause_from_environment() {
  TestPause p;
  const char* v = std::getenv("BARESGD_TEST_STOP_AT");
  if (v && !parse_test_pause(v, &p))
    throw std::runtime_error("BARESGD_TEST_STOP_AT='" + std::string(v) + "' is not RANK:STEP (two whole numbers)");
  return p;
}

// After SIGCONT the signal the test sent while we were stopped may be handled on another thread
// (any thread that does not block it takes a process-directed signal), a moment after this one
// runs on: wait for it (10 s at most), so the vote that follows sees it.
void maybe_pause_for_test(const TestPause& p, int rank, uint64_t step) {
  if (!p.active || p.rank != rank || p.step != step) return;
  raise(SIGSTOP);
  const struct timespec ms = {0, 1000000};
  for (int i = 0; i < 10000 && stop_signal_received() == 0; ++i) nanosleep(&ms, nullptr);
}
