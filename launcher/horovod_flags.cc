// horovod_flags: the table of horovodrun's flags and what ./launch does with each (see
// horovod_flags.h). Reasons are one line each; docs/horovod.md's flag table lists the same rows.
#include "launcher/horovod_flags.h"

#include <cstdlib>
#include <set>

#include "src/shown_text.h"

namespace {

constexpr FlagStatus kImpl = FlagStatus::kImplemented;
constexpr FlagStatus kNoOp = FlagStatus::kNoOp;
constexpr FlagStatus kRef = FlagStatus::kRefused;

const char kAutotune[] = "autotune-only: baresgd has no autotuner (no fusion buffer or cycle time to tune)";
const char kNoStall[] =
    "./train has no stall check: a collective that waits longer than its --comm-timeout fails the job";

// One row per flag, kept as the table it is (not reflowed).
// clang-format off
std::vector<HorovodFlag> make_table() {
  return {
      {{"--version", "-v"}, 0, kImpl, "prints the version and the backends built in, and exits", "", ""},
      {{"--num-proc", "-np"}, 1, kImpl, "number of ranks", "", ""},
      {{"--check-build", "-cb"}, 0, kImpl, "prints the version and the backends built in (horovodrun's controllers: gloo, mpi), and exits", "", ""},
      {{"--disable-cache"}, 0, kNoOp, "./launch caches no start-up checks: every check runs every time", "", ""},
      {{"--start-timeout"}, 1, kImpl, "seconds to reach the hosts and start the ranks (default: $HOROVOD_START_TIMEOUT, else 30)",
       "HOROVOD_START_TIMEOUT", ""},
      {{"--network-interfaces"}, 1, kImpl,
       "the interface the store binds and the ranks use (mpirun's btl/oob_tcp_if_include); one name: baresgd binds one", "", ""},
      {{"--network-interface"}, 1, kImpl, "the same, one name", "", ""},
      {{"--output-filename"}, 1, kImpl, "also writes DIR/rank.<rank>/stdout and stderr, <rank> zero-padded to the digits of the last rank (horovodrun's Gloo layout); untagged, in --mpi mode too", "", ""},
      {{"--verbose"}, 0, kImpl, "prints the rank table and the commands run", "", ""},
      {{"--config-file"}, 1, kImpl, "reads horovodrun's YAML keys; command-line flags win over the file", "", ""},
      {{"--ssh-port", "-p"}, 1, kImpl, "ssh port on every host", "", ""},
      {{"--ssh-identity-file", "-i"}, 1, kImpl, "ssh identity file", "", ""},
      {{"--fusion-threshold-mb"}, 1, kRef, "./train sums each step's whole gradient in one fused buffer: there is no threshold",
       "HOROVOD_FUSION_THRESHOLD", ""},
      {{"--cycle-time-ms"}, 1, kRef, "./train has no background fusion cycle: it sums the gradient once per step, in step",
       "HOROVOD_CYCLE_TIME", ""},
      {{"--cache-capacity"}, 1, kRef, "./train has no response cache: one gradient buffer per step, no tensor names to negotiate",
       "HOROVOD_CACHE_CAPACITY", ""},
      {{"--hierarchical-allreduce"}, 0, kRef,
       "baresgd has no hierarchical allreduce (./train --allreduce picks direct, ring, halving-doubling, gloo or mpi)",
       "HOROVOD_HIERARCHICAL_ALLREDUCE", "0"},
      {{"--no-hierarchical-allreduce"}, 0, kNoOp, "baresgd never runs a hierarchical allreduce", "", ""},
      {{"--hierarchical-allgather"}, 0, kRef, "./train runs no allgather", "HOROVOD_HIERARCHICAL_ALLGATHER", "0"},
      {{"--no-hierarchical-allgather"}, 0, kNoOp, "./train runs no allgather", "", ""},
      {{"--torus-allreduce"}, 0, kRef, "GPU-only: NCCL's 2D torus allreduce; baresgd trains on CPUs", "HOROVOD_TORUS_ALLREDUCE", "0"},
      {{"--no-torus-allreduce"}, 0, kNoOp, "baresgd never runs NCCL's torus allreduce", "", ""},
      {{"--autotune"}, 0, kRef, kAutotune, "HOROVOD_AUTOTUNE", "0"},
      {{"--no-autotune"}, 0, kNoOp, "baresgd never autotunes", "", ""},
      {{"--autotune-log-file"}, 1, kRef, kAutotune, "HOROVOD_AUTOTUNE_LOG", ""},
      {{"--autotune-warmup-samples"}, 1, kRef, kAutotune, "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", ""},
      {{"--autotune-steps-per-sample"}, 1, kRef, kAutotune, "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", ""},
      {{"--autotune-bayes-opt-max-samples"}, 1, kRef, kAutotune, "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", ""},
      {{"--autotune-gaussian-process-noise"}, 1, kRef, kAutotune, "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", ""},
      {{"--min-np", "--min-num-proc"}, 1, kImpl, "elastic: a failed job restarts with --resume on the usable hosts' slots, at least N ranks (--gloo)", "", ""},
      {{"--max-np", "--max-num-proc"}, 1, kImpl, "elastic: at most N ranks (default: every usable slot)", "", ""},
      {{"--slots-per-host"}, 1, kImpl, "elastic: slots of a discovered host printed without :slots (default 1)", "", ""},
      {{"--elastic-timeout"}, 1, kImpl, "elastic: seconds to wait for --min-np usable slots (default 600)", "HOROVOD_ELASTIC_TIMEOUT", ""},
      {{"--reset-limit"}, 1, kImpl, "restarts a failed job up to N times (the same as --max-restarts; horovodrun's elastic reset count)", "", ""},
      {{"--blacklist-cooldown-range"}, 2, kImpl, "elastic: MIN MAX seconds; a blacklisted host gets ranks again after MIN x 2^n + U x MIN s (its nth blacklisting, U uniform in [0, 1)) kept within MIN..MAX; 1 <= MIN <= MAX <= 3600", "", ""},
      {{"--timeline-filename"}, 1, kImpl, "every rank gets HOROVOD_TIMELINE=FILE; ./train records its timeline there",
       "HOROVOD_TIMELINE", ""},
      {{"--timeline-mark-cycles"}, 0, kRef, "./train has no fusion cycles to mark", "HOROVOD_TIMELINE_MARK_CYCLES", "0"},
      {{"--no-timeline-mark-cycles"}, 0, kNoOp, "./train's timeline marks no cycles", "", ""},
      {{"--no-stall-check"}, 0, kNoOp, "./train has no stall check to disable (a stuck collective fails after --comm-timeout)",
       "", ""},
      {{"--stall-check"}, 0, kRef, kNoStall, "HOROVOD_STALL_CHECK_DISABLE", "1"},
      {{"--stall-check-warning-time-seconds"}, 1, kRef, kNoStall, "HOROVOD_STALL_CHECK_TIME_SECONDS", ""},
      {{"--stall-check-shutdown-time-seconds"}, 1, kRef, kNoStall, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", ""},
      {{"--mpi-threads-disable"}, 0, kRef,
       "./train's MPI backend always asks for MPI_THREAD_SERIALIZED; it has no mode without threads",
       "HOROVOD_MPI_THREADS_DISABLE", "0"},
      {{"--no-mpi-threads-disable"}, 0, kNoOp, "./train always initializes MPI with MPI_THREAD_SERIALIZED", "", ""},
      {{"--mpi-args"}, 1, kImpl, "--mpi: extra mpirun arguments, split as a shell would", "", ""},
      {{"--tcp"}, 0, kNoOp,
       "Gloo and Open MPI ranks already use TCP (horovodrun's --tcp sets NCCL_IB_DISABLE and Spectrum MPI's -tcp)", "", ""},
      {{"--binding-args"}, 1, kImpl,
       "--mpi: mpirun's binding arguments instead of -bind-to none -map-by slot (-bind-to/-map-by values, the rest passed on)",
       "", ""},
      {{"--num-nccl-streams"}, 1, kRef, "GPU-only: NCCL streams; baresgd trains on CPUs", "HOROVOD_NUM_NCCL_STREAMS", ""},
      {{"--thread-affinity"}, 1, kRef, "baresgd has no background thread to pin (the training thread communicates)",
       "HOROVOD_THREAD_AFFINITY", ""},
      {{"--gloo-timeout-seconds"}, 1, kImpl,
       "every rank gets HOROVOD_GLOO_TIMEOUT_SECONDS=N: ./train's Gloo collectives time out after N s (its --comm-timeout default; ./train's own flag wins)",
       "HOROVOD_GLOO_TIMEOUT_SECONDS", ""},
      {{"--log-level"}, 1, kImpl,
       "every rank gets HOROVOD_LOG_LEVEL (TRACE, DEBUG, INFO, WARNING, ERROR, FATAL), as horovodrun sets it; ./train has no leveled log and does not filter by it",
       "HOROVOD_LOG_LEVEL", ""},
      {{"--log-with-timestamp"}, 0, kImpl, "every rank gets HOROVOD_LOG_HIDE_TIME=0, as horovodrun sets it (./train does not read it)", "HOROVOD_LOG_HIDE_TIME", ""},
      {{"--log-without-timestamp"}, 0, kImpl, "every rank gets HOROVOD_LOG_HIDE_TIME=1, as horovodrun sets it (./train does not read it)", "HOROVOD_LOG_HIDE_TIME", ""},
      {{"--prefix-output-with-timestamp", "-prefix-timestamp"}, 0, kImpl, "prefixes each output line with the time", "", ""},
      {{"--log-hide-timestamp"}, 0, kImpl, "the same as --log-without-timestamp (horovodrun's old name)", "", ""},
      {{"--no-log-hide-timestamp"}, 0, kImpl, "the same as --log-with-timestamp (horovodrun's old name)", "", ""},
      {{"--hosts", "-H"}, 1, kImpl, "host:slots,... (default localhost:N)", "", ""},
      {{"--hostfile", "-hostfile"}, 1, kImpl, "lines 'host slots=K'", "", ""},
      {{"--host-discovery-script"}, 1, kImpl, "elastic: run before every start and once a second while the job runs (more slots grow it at its next checkpoint), prints the usable hosts (host or host:slots per line)", "", ""},
      {{"--gloo"}, 0, kImpl, "starts the ranks itself with a Gloo rendezvous store", "", ""},
      {{"--mpi"}, 0, kImpl, "starts the ranks with Open MPI's mpirun", "", ""},
      {{"--jsrun"}, 0, kRef, "LSF's jsrun is not supported: use --mpi (Open MPI's mpirun) or --gloo", "", ""},
      {{"--help", "-h"}, 0, kImpl, "prints the help", "", ""},
  };
}
// clang-format on

}  // namespace

const std::vector<HorovodFlag>& horovod_flags() {
  static const std::vector<HorovodFlag> kTable = make_table();
  return kTable;
}

const HorovodFlag* find_horovod_flag(const std::string& flag) {
  for (const HorovodFlag& f : horovod_flags())
    for (const std::string& n : f.names)
      if (n == flag) return &f;
  return nullptr;
}

const char* flag_status_name(FlagStatus s) {
  switch (s) {
    case FlagStatus::kImplemented:
      return "implemented";
    case FlagStatus::kNoOp:
      return "no-op";
    case FlagStatus::kRefused:
      return "refused";
  }
  return "?";
}

std::string refusal_line(const HorovodFlag& f, const std::string& as_given) {
  return as_given + " is not supported: " + f.meaning;
}

const char* process_env(const char* name) { return std::getenv(name); }

std::vector<std::string> ignored_env_warnings(const EnvLookup& env) {
  std::vector<std::string> lines;
  std::set<std::string> named;
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status != FlagStatus::kRefused || f.env.empty() || named.count(f.env)) continue;
    const char* v = env(f.env.c_str());
    if (!v || !*v || (!f.env_off.empty() && f.env_off == v)) continue;
    named.insert(f.env);
    lines.push_back("warning: " + f.env + "=" + shown_text(v) + " is ignored (horovodrun's " + f.names[0] +
                    "): " + f.meaning);
  }
  return lines;
}

std::string horovod_flags_help() {
  std::string out;
  for (const HorovodFlag& f : horovod_flags()) {
    if (f.status == FlagStatus::kImplemented) continue;
    std::string names;
    for (const std::string& n : f.names) names += (names.empty() ? "" : ", ") + n;
    out += "  " + names + "  " + flag_status_name(f.status) + ": " + f.meaning + "\n";
  }
  return out;
}

std::string horovod_log_level(const std::string& v) {
  std::string up;
  for (char c : v) up += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  for (const char* l : {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"})
    if (up == l) return up;
  return "";
}
