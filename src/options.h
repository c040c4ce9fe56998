// options: ./train's command-line flags (those of the Horovod PyTorch MNIST example, same
// defaults, plus baresgd's own), parsed argparse-style: `--flag value` or `--flag=value`, whole
// flag names only (argparse's abbreviations are not accepted).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/step_range.h"
#include "src/what_if_spec.h"

struct Options {
  // The Horovod PyTorch MNIST example's flags, same defaults.
  int batch_size = 64;
  int test_batch_size = 1000;
  int epochs = 10;
  double lr = 0.01;
  double momentum = 0.5;
  bool no_cuda = false;  // accepted; baresgd is CPU only
  long long seed = 42;
  int log_interval = 10;
  bool fp16_allreduce = false;
  bool use_mixed_precision = false;
  bool use_adasum = false;
  double gradient_predivide_factor = 1.0;
  std::string data_dir = "./data";
  int num_proc = 0;           // > 0: re-launch through ./launch with this many ranks
  std::string hosts;          // with --num-proc: host:slots,...
  std::string communication;  // with --num-proc: gloo | mpi

  // baresgd's own.
  std::string backend;             // --backend single|gloo|mpi (default: from the environment)
  std::string rendezvous_dir;      // --rendezvous-dir: Gloo FileStore on a shared directory
  std::string job_id;              // --job-id: replaces the starter's job id ("" = the starter's)
  std::string network_interface;   // --network-interface: Gloo binds this interface/address
  std::string allreduce = "auto";  // --allreduce: the gradient sum's algorithm (comm/allreduce.h names)
  bool overlap = false;            // --overlap on|off: bucketed averaging during backward
  double start_timeout = 30;       // --start-timeout seconds (rendezvous)
  double comm_timeout = 60;        // --comm-timeout seconds (one collective)
  std::string checkpoint_dir;      // --checkpoint-dir
  int checkpoint_every = 0;        // --checkpoint-every N steps (0: epoch ends only)
  bool resume = false;             // --resume
  bool resume_any_config = false;  // --resume-any-config: continue a checkpoint of another configuration
  bool resume_fresh = false;       // --resume-fresh: no usable checkpoint is not an error
  bool no_dropout = false;         // --no-dropout: dropout layers off in training (tests)
  long long max_steps = -1;        // --max-steps: stop after this many optimizer steps (tests)
  std::string dump_params;         // --dump-params FILE: raw float32 parameters at the end (tests)
  std::string sample_record;       // --sample-record FILE: which samples made each step (src/sample_record.h)
  int threads = 0;                 // --threads: compute threads per rank (0: src/thread_policy.h)
  // Seeing inside the run (src/run_records.h).
  std::string metrics;                  // --metrics FILE: JSON Lines records (rank 0 writes)
  std::vector<uint64_t> inspect_steps;  // --inspect 0,100,500: 0-based optimizer steps, ascending
  std::string inspect_dump;             // --inspect-dump DIR: gradients at those steps (tests)
  long long check_sync = 0;             // --check-sync N: compare parameter checksums every N steps
  std::string timeline;                 // --timeline FILE: Chrome trace of every rank (else HOROVOD_TIMELINE)
  StepRange timeline_steps;             // --timeline-steps A-B: optimizer steps recorded (default all)
  bool timeline_steps_given = false;    // --timeline-steps was given (it needs a timeline)
  // What-if switches (src/what_if_spec.h): emulations a learner turns without root.
  std::string straggler;         // --straggler RANK:MS or RANK:xF as given ("": off)
  StragglerSpec straggler_spec;  // its value
  double link_delay_ms = 0;      // --link-delay MS: each received message of our algorithms held MS
  std::string link_bandwidth;    // --link-bandwidth RATE as given ("": unlimited)
  double link_bytes_per_s = 0;   // its value (0: unlimited)
  bool help = false;
  bool data_dir_given = false;  // --data-dir was on the command line (src/data_dir.h)
};

// Parses argv[1..]. On a bad flag throws TrainUsageError (the caller prints usage and exits 2).
struct TrainUsageError {
  std::string message;
};
Options parse_options(const std::vector<std::string>& args);
// The usage text printed by --help and on a usage error.
std::string usage_text();
