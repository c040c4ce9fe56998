// options: ./launch's command line, parsed (pure; errors are thrown as UsageError).
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "launcher/elastic_options.h"
#include "launcher/horovod_flags.h"
#include "launcher/tagger.h"

// A bad command line (exit status 2). show_usage: unknown or malformed flags, where the usage line
// follows the message; missing -np/CMD/transport and the like are one-line errors.
struct UsageError : std::runtime_error {
  UsageError(const std::string& msg, bool usage) : std::runtime_error(msg), show_usage(usage) {}
  bool show_usage;
};

enum class Transport { kNone, kGloo, kMpi };

struct LaunchOptions {
  int np = 0;
  bool np_given = false;  // -np on the command line (else the Slurm allocation's, host_choice.h)
  std::string hosts;      // -H
  std::string hostfile;   // --hostfile
  Transport transport = Transport::kNone;
  std::string ssh_port;      // -p
  std::string ssh_identity;  // -i
  std::string ssh_config;    // -F
  TagFormat tag_format = TagFormat::kHorovod;
  std::string output_dir;  // --output-filename
  bool timestamp = false;
  bool verbose = false;
  double start_timeout = 30;      // seconds
  double timeout = 0;             // seconds, 0 = none
  double stop_grace = 3;          // --stop-grace: seconds from a stop's signal to SIGKILL
  double heartbeat_timeout = 30;  // seconds without a heartbeat before a host is declared lost
  double heartbeat_interval = 0;  // seconds between heartbeats; 0 = min(5, heartbeat_timeout / 6)
  std::string network_interface;
  std::string bind_addr;
  std::string timeline_file;  // --timeline-filename: every rank gets HOROVOD_TIMELINE
  bool dry_run = false;       // --dry-run: print what would start, start nothing
  bool no_srun = false;       // --no-srun: in a Slurm allocation, start ranks locally and over ssh
  // --mpi only (as horovodrun): -x VAR[=VALUE] (repeatable) sends VAR to every rank, with VALUE
  // or the launcher's value; --mpi-args "..." (split as a shell would) goes to mpirun before CMD;
  // --bind-to / --map-by replace the default "none" / "slot".
  std::vector<std::string> mpi_env;   // -x entries, as given
  std::vector<std::string> mpi_args;  // --mpi-args, split into words (repeatable, appended)
  std::string bind_to = "none", map_by = "slot";
  // --max-restarts N (Horovod's --reset-limit N): after a job failure, start the whole job again
  // (with --resume) up to N times; 0 = never (today's behaviour). See launcher/restart.h.
  int max_restarts = 0;
  bool restarts_given = false;
  ElasticOptions elastic;  // --min-np, --max-np, --host-discovery-script, ... (elastic_options.h)
  // horovodrun's flags (launcher/horovod_flags.h): --config-file FILE (its keys below the command
  // line), and the HOROVOD_* variables flags set for every rank (--gloo-timeout-seconds,
  // --log-level, --log-with[out]-timestamp), over the caller's.
  std::string config_file;
  std::vector<std::pair<std::string, std::string>> horovod_env;
  // Lines ./launch says (as "launch: LINE") before it starts: one per ignored HOROVOD_* variable
  // (horovod_flags.h ignored_env_warnings), and which of --gloo/--mpi it picked when neither was
  // given (horovodrun's choice, options.cc default_transport).
  std::vector<std::string> notices;
  bool version = false;  // -v, --version, -cb, --check-build: print the version and stop
  bool help = false;
  std::vector<std::string> command;  // CMD ARGS...
};

// Parses argv[1..argc). Options end at the first word that is not an option (or after "--").
// Both "--flag value" and "--flag=value" work for long flags. Throws UsageError. -np may be
// missing (np_given false): inside a Slurm allocation the allocation sets it, else choose_hosts
// (host_choice.h) refuses the command line.
// `env` supplies HOROVOD_START_TIMEOUT and the other HOROVOD_* variables horovodrun reads (flags
// and --config-file win; a malformed one is a one-line error naming it, a refused flag's one a
// warning in notices), and PATH (where mpirun is looked for when neither --gloo nor --mpi is given:
// then ./launch picks as horovodrun does, MPI when this build has it and mpirun is on PATH, else
// Gloo; an elastic job always Gloo; the choice is a line in notices).
LaunchOptions parse_launch_options(const std::vector<std::string>& args, const EnvLookup& env);
LaunchOptions parse_launch_options(const std::vector<std::string>& args);  // env = getenv

// Strict flag values, shared with the flag groups parsed elsewhere (elastic_options.h): a whole
// number in int range; a number of seconds > 0 and <= 1e8. Both throw UsageError naming flag.
int parse_int_flag(const std::string& flag, const std::string& v);
double parse_seconds_flag(const std::string& flag, const std::string& v);
// Seconds as messages show them: "%g" (0.5, 30, 1e+06).
std::string seconds_text(double s);

// The one-line usage and the full --help text.
const char* launch_usage_line();
const char* launch_help_text();
