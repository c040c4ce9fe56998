// fuzz_train_options: libFuzzer target for ./train's flag parser (src/options.h parse_options).
//
// Input: the bytes split on NUL into argv[1..] (so "--lr\0" "0.5\0--epochs=3" is three words).
// Contract checked: parse_options either returns or throws TrainUsageError — nothing else escapes —
// and whatever it accepts is usable by its one caller, train_main.cc:
//   every numeric field inside the range the help text promises, choices from their lists
//   (--allreduce: a name parse_allreduce_algorithm takes),
//   --hosts/--communication only with --num-proc, and both timeouts convertible to the positive
//   whole number of milliseconds train_main computes as long(seconds * 1000).
// Known (reported) bug, skipped with BARESGD_FUZZ_SKIP_KNOWN=1: --start-timeout/--comm-timeout
// accept values like 1e300 or 1e-9 whose millisecond count does not fit a long / rounds to 0
// (float-to-integer overflow in train_main.cc; the rank then fails after start-up with
// "communication timeouts must be positive (start -9223372036854775808 ms ...)").
//
// Build: make fuzz (build-fuzz/fuzz_train_options); run: .ci/fuzz.sh
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/allreduce.h"
#include "src/options.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

bool millis_ok(double seconds) {
  const double ms = seconds * 1000;
  return std::isfinite(ms) && ms >= 1 && ms < 9.2e18;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = fuzz_split_nul(std::string(reinterpret_cast<const char*>(data), size));
  Options o;
  try {
    o = parse_options(args);
  } catch (const TrainUsageError& e) {
    FUZZ_CHECK(!e.message.empty());
    return 0;
  }
  FUZZ_CHECK(o.batch_size >= 1 && o.batch_size <= (1 << 20));
  FUZZ_CHECK(o.test_batch_size >= 1 && o.test_batch_size <= (1 << 20));
  FUZZ_CHECK(o.epochs >= 0 && o.epochs <= (1 << 20));
  FUZZ_CHECK(std::isfinite(o.lr) && o.lr >= 0);
  FUZZ_CHECK(std::isfinite(o.momentum) && o.momentum >= 0);
  FUZZ_CHECK(o.log_interval >= 1);
  FUZZ_CHECK(std::isfinite(o.gradient_predivide_factor) && o.gradient_predivide_factor > 0);
  FUZZ_CHECK(o.num_proc >= 0 && o.num_proc <= (1 << 16));
  FUZZ_CHECK(o.communication.empty() || o.communication == "gloo" || o.communication == "mpi");
  FUZZ_CHECK(o.backend.empty() || o.backend == "single" || o.backend == "gloo" || o.backend == "mpi");
  FUZZ_CHECK((o.hosts.empty() && o.communication.empty()) || o.num_proc > 0);
  FUZZ_CHECK(std::isfinite(o.start_timeout) && o.start_timeout > 0);
  FUZZ_CHECK(std::isfinite(o.comm_timeout) && o.comm_timeout > 0);
  FUZZ_CHECK(o.checkpoint_every >= 0);
  FUZZ_CHECK(o.max_steps >= -1);
  FUZZ_CHECK(o.threads >= 0 && o.threads <= 1024);
  FUZZ_CHECK(o.check_sync >= 0 && o.check_sync <= (1LL << 30));
  for (size_t i = 1; i < o.inspect_steps.size(); ++i) FUZZ_CHECK(o.inspect_steps[i - 1] < o.inspect_steps[i]);
  FUZZ_CHECK(o.inspect_dump.empty() || !o.inspect_steps.empty());
  // --allreduce: a name comm/allreduce.h knows (train.cc parses it again, expecting no error).
  FUZZ_CHECK(std::string(allreduce_algorithm_name(parse_allreduce_algorithm(o.allreduce))) == o.allreduce);
  if (!fuzz_skip_known()) {
    // train_main.cc: std::chrono::milliseconds(long(opts.start_timeout * 1000)), same for comm.
    FUZZ_CHECK(millis_ok(o.start_timeout));
    FUZZ_CHECK(millis_ok(o.comm_timeout));
  }
  // Parsing is a pure function of argv.
  Options again = parse_options(args);
  FUZZ_CHECK(again.batch_size == o.batch_size && again.data_dir == o.data_dir &&
             again.checkpoint_dir == o.checkpoint_dir && again.resume == o.resume);
  return 0;
}
