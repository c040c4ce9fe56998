// options: parses ./train's flags into Options; every malformed value is a TrainUsageError naming it.
#include "src/options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>

#include "comm/allreduce.h"
#include "src/step_list.h"

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

long long parse_int(const std::string& flag, const std::string& v, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw TrainUsageError{"argument " + flag + ": invalid int value: " + quote(v)};
  if (x < lo || x > hi)
    throw TrainUsageError{"argument " + flag + ": " + v + " is out of range [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]"};
  return x;
}

double parse_float(const std::string& flag, const std::string& v, double lo, bool lo_open) {
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    throw TrainUsageError{"argument " + flag + ": invalid float value: " + quote(v)};
  if (lo_open ? !(x > lo) : !(x >= lo)) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", lo);
    throw TrainUsageError{"argument " + flag + ": " + v + " must be " + (lo_open ? "> " : ">= ") + bound};
  }
  return x;
}

// Seconds in [0.001, 1e6]: whole milliseconds, no overflow when converted.
double parse_timeout(const std::string& flag, const std::string& v) {
  double x = parse_float(flag, v, 0, true);
  if (x < 0.001 || x > 1e6)
    throw TrainUsageError{"argument " + flag + ": " + v + " seconds is out of range [0.001, 1000000]"};
  return x;
}

std::vector<uint64_t> parse_steps(const std::string& flag, const std::string& v) {
  try {
    return parse_step_list(v);
  } catch (const std::invalid_argument& e) {
    throw TrainUsageError{"argument " + flag + ": invalid step list " + quote(v) + ": " + e.what()};
  }
}

std::string non_empty(const std::string& flag, const std::string& v) {
  if (v.empty()) throw TrainUsageError{"argument " + flag + ": expected a path, got ''"};
  return v;
}

// The usage lines (printed above a usage error too).
const char* const kUsageSynopsis =
    "usage: train [--batch-size N] [--test-batch-size N] [--epochs N] [--lr LR]\n"
    "             [--momentum M] [--no-cuda] [--seed S] [--log-interval N]\n"
    "             [--fp16-allreduce] [--use-mixed-precision] [--use-adasum]\n"
    "             [--gradient-predivide-factor F] [--data-dir DIR]\n"
    "             [--num-proc N] [--hosts H] [--communication gloo|mpi] [baresgd flags]\n"
    "\n";

// The Horovod example's flags.
const char* const kExampleFlagsHelp =
    "baresgd MNIST example (flags and defaults of the Horovod PyTorch MNIST example)\n"
    "\n"
    "  --batch-size N                 input batch size for training (default: 64)\n"
    "  --test-batch-size N            input batch size for testing (default: 1000)\n"
    "  --epochs N                     number of epochs to train (default: 10)\n"
    "  --lr LR                        learning rate (default: 0.01), times world size\n"
    "  --momentum M                   SGD momentum (default: 0.5)\n"
    "  --no-cuda                      accepted for compatibility; baresgd is CPU only\n"
    "  --seed S                       random seed (default: 42)\n"
    "  --log-interval N               batches between training status lines (default: 10)\n"
    "  --fp16-allreduce               use fp16 compression during allreduce\n"
    "  --use-mixed-precision          use mixed precision (needs a GPU; not supported)\n"
    "  --use-adasum                   use the Adasum algorithm to do reduction\n"
    "  --gradient-predivide-factor F  divide gradients by F before the sum, multiply by\n"
    "                                 F/size after (default: 1.0)\n"
    "  --data-dir DIR                 MNIST location: DIR/MNIST/raw/ or DIR itself, raw or\n"
    "                                 .gz IDX files (default: $BARESGD_DATA_DIR, else ./data;\n"
    "                                 fetch with `make data` in the source tree)\n"
    "  --num-proc N                   run N ranks through ./launch (like horovod.run)\n"
    "  --hosts H                      with --num-proc: host:slots,... (default localhost:N)\n"
    "  --communication gloo|mpi       with --num-proc: the backend (default gloo)\n"
    "\n";

// baresgd's own flags.
const char* const kBaresgdFlagsHelp =
    "baresgd flags:\n"
    "  --backend single|gloo|mpi      force the comm backend (default: from the environment)\n"
    "  --rendezvous-dir DIR           Gloo rendezvous through files in a shared DIR\n"
    "  --job-id ID                    the job's id, the same on every rank (--rendezvous-dir\n"
    "                                 needs one when no starter gives it; default: the starter's)\n"
    "  --network-interface IF         Gloo binds this interface name or address\n"
    "  --allreduce ALG                gradient sum: auto, direct, ring, halving-doubling,\n"
    "                                 gloo or mpi (the library's own; default: auto)\n"
    "  --overlap on|off               reduce each gradient bucket while backward still runs\n"
    "                                 (default: off; the same bits either way, docs/comm.md)\n"
    "  --start-timeout S              rendezvous timeout in seconds (default: 30)\n"
    "  --comm-timeout S               timeout of one collective in seconds, Gloo and MPI alike\n"
    "                                 (MPI: the job ends with MPI_Abort; default: 60)\n"
    "  --checkpoint-dir DIR           save a checkpoint at every epoch end (rank 0)\n"
    "  --checkpoint-every N           also every N optimizer steps\n"
    "  --resume                       continue from the newest valid checkpoint of this\n"
    "                                 configuration (a newer one of another is refused)\n"
    "  --resume-any-config            with --resume: continue it even when its --seed, --lr,\n"
    "                                 --batch-size, ... differ (named in one line)\n"
    "  --resume-fresh                 with --resume: start from the beginning when checkpoints\n"
    "                                 are there but none is usable (else that is an error)\n"
    "  --threads N                    compute threads per rank (default: cores / ranks on\n"
    "                                 this host, or OPENBLAS_NUM_THREADS)\n"
    "  --timeline FILE                record a Chrome trace (Perfetto, chrome://tracing) of\n"
    "                                 every rank into FILE (default: $HOROVOD_TIMELINE)\n"
    "  --timeline-steps A-B           record only optimizer steps A..B (0-based; or A)\n"
    "  --no-dropout                   disable both dropout layers (tests)\n"
    "  --max-steps N                  stop after N optimizer steps (tests)\n"
    "  --sample-record FILE           rank 0 writes which samples made each step, one line\n"
    "                                 \"step epoch rank index...\" per step and rank; a resumed\n"
    "                                 run drops the lines of the steps it redoes (tests)\n"
    "  --dump-params FILE             write the final parameters as raw float32 (tests);\n"
    "                                 a %r in FILE is replaced by the rank, every rank writes\n"
    "  --metrics FILE                 rank 0 writes JSON Lines: header, logged steps of every\n"
    "                                 rank, tests, --inspect records, summary\n"
    "  --inspect STEPS                per-layer table of these 0-based steps (e.g. 0,100,500)\n"
    "                                 on stderr: gradient norms, cosines, bytes, checksums\n"
    "  --inspect-dump DIR             with --inspect: each rank's local and averaged gradient\n"
    "                                 at those steps as raw float32 files in DIR (tests)\n"
    "  --check-sync N                 every N steps compare the ranks' parameter checksums;\n"
    "                                 stop naming the layer and ranks if they differ\n"
    "  --straggler RANK:MS            what-if: rank RANK sleeps MS ms in each step after\n"
    "                                 backward (RANK:xF: its compute takes F times as long)\n"
    "  --link-delay MS                what-if: each message of our allreduce algorithms\n"
    "                                 (--allreduce ring, halving-doubling, direct) is held\n"
    "                                 MS ms after it arrives, as a link with that latency\n"
    "  --link-bandwidth RATE          what-if: ... and bytes/RATE more (100Mbit, 1Gbit,\n"
    "                                 10MB/s); an emulation in user space: Gloo's and MPI's\n"
    "                                 own collectives (--allreduce auto, gloo, mpi), --overlap\n"
    "                                 on's buckets and the start-up broadcast are not delayed\n"
    "  -h, --help                     show this help and exit\n"
    "  --version                      print the version and the backends built in, and exit\n"
    "\n"
    "SIGTERM or SIGUSR1 stops the run at a step every rank agrees on: rank 0 saves it (with\n"
    "--checkpoint-dir), says so in one line, and every rank exits 128 + the signal (143, 138);\n"
    "--resume continues it. A second signal exits at once, without saving.\n";

}  // namespace

std::string usage_text() { return std::string(kUsageSynopsis) + kExampleFlagsHelp + kBaresgdFlagsHelp; }

namespace {

// A flag that takes a value: stores it into the Options the table was made for, or throws
// TrainUsageError naming the flag.
using Setter = std::function<void(const std::string& flag, const std::string& v)>;
using FlagTable = std::map<std::string, Setter>;
constexpr long long kMaxCount = 1LL << 40;

// A value that must be one of choices ("argument --flag: invalid choice: ...").
// --job-id: 1 to 128 bytes of [A-Za-z0-9._-] (it prefixes keys and, escaped, file names).
std::string job_id_value(const std::string& flag, const std::string& v) {
  const bool ok =
      !v.empty() && v.size() <= 128 &&
      v.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos;
  if (!ok)
    throw TrainUsageError{"argument " + flag + ": invalid job id " + quote(v) + " (1 to 128 of A-Z a-z 0-9 . _ -)"};
  return v;
}

std::string one_of(const std::string& flag, const std::string& v, const std::vector<std::string>& choices) {
  std::string listed;
  for (const auto& c : choices) {
    if (v == c) return v;
    listed += (listed.empty() ? "'" : ", '") + c + "'";
  }
  throw TrainUsageError{"argument " + flag + ": invalid choice: " + quote(v) + " (choose from " + listed + ")"};
}

// The Horovod PyTorch MNIST example's valued flags, and its --num-proc relaunch.
void add_example_flags(Options& o, FlagTable* t) {
  t->insert({
      {"--batch-size", [&](auto& f, auto& v) { o.batch_size = (int)parse_int(f, v, 1, 1 << 20); }},
      {"--test-batch-size", [&](auto& f, auto& v) { o.test_batch_size = (int)parse_int(f, v, 1, 1 << 20); }},
      {"--epochs", [&](auto& f, auto& v) { o.epochs = (int)parse_int(f, v, 0, 1 << 20); }},
      {"--lr", [&](auto& f, auto& v) { o.lr = parse_float(f, v, 0, false); }},
      {"--momentum", [&](auto& f, auto& v) { o.momentum = parse_float(f, v, 0, false); }},
      {"--seed", [&](auto& f, auto& v) { o.seed = parse_int(f, v, -kMaxCount, kMaxCount); }},
      {"--log-interval", [&](auto& f, auto& v) { o.log_interval = (int)parse_int(f, v, 1, 1 << 30); }},
      {"--gradient-predivide-factor",
       [&](auto& f, auto& v) { o.gradient_predivide_factor = parse_float(f, v, 0, true); }},
      {"--data-dir",
       [&](auto&, auto& v) {
         o.data_dir = v;
         o.data_dir_given = true;
       }},
      {"--num-proc", [&](auto& f, auto& v) { o.num_proc = (int)parse_int(f, v, 1, 1 << 16); }},
      {"--hosts", [&](auto&, auto& v) { o.hosts = v; }},
      {"--communication",
       [&](auto& f, auto& v) {
         o.communication = one_of(f, v, {"gloo", "mpi"});
       }},
  });
}

// How the ranks connect and average: backend, rendezvous, allreduce, overlap, timeouts, threads.
void add_comm_flags(Options& o, FlagTable* t) {
  t->insert({
      {"--backend",
       [&](auto& f, auto& v) {
         o.backend = one_of(f, v, {"single", "gloo", "mpi"});
       }},
      {"--rendezvous-dir", [&](auto&, auto& v) { o.rendezvous_dir = v; }},
      {"--job-id", [&](auto& f, auto& v) { o.job_id = job_id_value(f, v); }},
      {"--network-interface", [&](auto&, auto& v) { o.network_interface = v; }},
      {"--allreduce",
       [&](auto&, auto& v) {
         try {
           parse_allreduce_algorithm(v);
         } catch (const std::invalid_argument& e) {
           throw TrainUsageError{e.what()};
         }
         o.allreduce = v;
       }},
      {"--overlap",
       [&](auto& f, auto& v) {
         o.overlap = one_of(f, v, {"on", "off"}) == "on";
       }},
      {"--start-timeout", [&](auto& f, auto& v) { o.start_timeout = parse_timeout(f, v); }},
      {"--comm-timeout", [&](auto& f, auto& v) { o.comm_timeout = parse_timeout(f, v); }},
      {"--threads", [&](auto& f, auto& v) { o.threads = (int)parse_int(f, v, 1, 1024); }},
  });
}

// Checkpoints and what a run leaves behind: --checkpoint-*, --max-steps, --dump-params,
// --sample-record.
void add_run_flags(Options& o, FlagTable* t) {
  t->insert({
      {"--checkpoint-dir",
       [&](auto& f, auto& v) {
         if (v.empty())
           throw TrainUsageError{"argument " + f + ": empty directory name (omit the flag for no checkpoints)"};
         o.checkpoint_dir = v;
       }},
      {"--checkpoint-every", [&](auto& f, auto& v) { o.checkpoint_every = (int)parse_int(f, v, 1, 1 << 30); }},
      {"--max-steps", [&](auto& f, auto& v) { o.max_steps = parse_int(f, v, 0, kMaxCount); }},
      {"--dump-params", [&](auto& f, auto& v) { o.dump_params = non_empty(f, v); }},
      {"--sample-record", [&](auto& f, auto& v) { o.sample_record = non_empty(f, v); }},
  });
}

// Seeing inside the run: --metrics, --inspect*, --check-sync, --timeline*.
void add_inspection_flags(Options& o, FlagTable* t) {
  t->insert({
      {"--metrics", [&](auto& f, auto& v) { o.metrics = non_empty(f, v); }},
      {"--inspect", [&](auto& f, auto& v) { o.inspect_steps = parse_steps(f, v); }},
      {"--inspect-dump", [&](auto& f, auto& v) { o.inspect_dump = non_empty(f, v); }},
      {"--check-sync", [&](auto& f, auto& v) { o.check_sync = parse_int(f, v, 1, 1LL << 30); }},
      {"--timeline", [&](auto&, auto& v) { o.timeline = v; }},
      {"--timeline-steps",
       [&](auto& f, auto& v) {
         o.timeline_steps_given = true;
         if (!parse_step_range(v, &o.timeline_steps))
           throw TrainUsageError{"argument " + f + ": invalid step range " + quote(v) +
                                 " (expected A-B or A: 0-based optimizer steps, A <= B)"};
       }},
  });
}

// A what-if value: the parser's reason becomes "argument --flag: reason".
template <class Parse>
auto what_if(const std::string& flag, const std::string& v, Parse parse) {
  try {
    return parse(v);
  } catch (const std::invalid_argument& e) {
    throw TrainUsageError{"argument " + flag + ": " + e.what()};
  }
}

// The what-if switches: --straggler, --link-delay, --link-bandwidth (src/what_if_spec.h).
void add_what_if_flags(Options& o, FlagTable* t) {
  t->insert({
      {"--straggler",
       [&](auto& f, auto& v) {
         o.straggler_spec = what_if(f, v, parse_straggler);
         o.straggler = v;
       }},
      {"--link-delay", [&](auto& f, auto& v) { o.link_delay_ms = what_if(f, v, parse_link_delay_ms); }},
      {"--link-bandwidth",
       [&](auto& f, auto& v) {
         o.link_bytes_per_s = what_if(f, v, parse_link_rate);
         o.link_bandwidth = v;
       }},
  });
}

std::map<std::string, bool*> switch_flags(Options& o) {
  return {
      {"--no-cuda", &o.no_cuda},
      {"--fp16-allreduce", &o.fp16_allreduce},
      {"--use-mixed-precision", &o.use_mixed_precision},
      {"--use-adasum", &o.use_adasum},
      {"--resume", &o.resume},
      {"--resume-any-config", &o.resume_any_config},
      {"--resume-fresh", &o.resume_fresh},
      {"--no-dropout", &o.no_dropout},
      {"--help", &o.help},
      {"-h", &o.help},
  };
}

// The flags that only mean something with another.
void check_flag_pairs(const Options& o) {
  if ((!o.hosts.empty() || !o.communication.empty()) && o.num_proc == 0)
    throw TrainUsageError{"--hosts and --communication need --num-proc"};
  if (o.resume_any_config && !o.resume) throw TrainUsageError{"--resume-any-config needs --resume"};
  if (o.resume_fresh && !o.resume) throw TrainUsageError{"--resume-fresh needs --resume"};
  if (!o.inspect_dump.empty() && o.inspect_steps.empty()) throw TrainUsageError{"--inspect-dump needs --inspect STEPS"};
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  FlagTable valued;
  add_example_flags(o, &valued);
  add_comm_flags(o, &valued);
  add_run_flags(o, &valued);
  add_inspection_flags(o, &valued);
  add_what_if_flags(o, &valued);
  const std::map<std::string, bool*> switches = switch_flags(o);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0) {  // --flag=value
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
    }
    if (auto s = switches.find(a); s != switches.end()) {
      if (has_value) throw TrainUsageError{"argument " + a + ": ignored explicit argument " + quote(value)};
      *s->second = true;
      continue;
    }
    auto it = valued.find(a);
    if (it == valued.end()) {
      if (a.empty() || a[0] != '-') throw TrainUsageError{"unrecognized argument: " + quote(args[i])};
      throw TrainUsageError{"unrecognized argument: " + args[i]};
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw TrainUsageError{"argument " + a + ": expected one argument"};
      value = args[++i];
    }
    it->second(a, value);
  }
  check_flag_pairs(o);
  return o;
}
