// options: parsing ./launch's flags into LaunchOptions, with one-line errors (see options.h).
#include "launcher/options.h"

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "launcher/horovod_config.h"
#include "launcher/process.h"
#include "launcher/shell_words.h"
#include "src/parse_int.h"
#include "src/safe_file.h"
#include "src/shown_text.h"

int parse_int_flag(const std::string& flag, const std::string& v) {
  long long x = 0;
  switch (parse_decimal(v, IntSign::kPlusOrMinus, INT_MIN, INT_MAX, &x)) {
    case IntText::kOk:
      return static_cast<int>(x);
    case IntText::kEmpty:
      throw UsageError(flag + " needs a whole number", true);
    case IntText::kNotDigits:
      throw UsageError(flag + " '" + v + "' is not a whole number", true);
    case IntText::kOutOfRange:
      break;
  }
  throw UsageError(flag + " '" + v + "' is out of range", true);
}

double parse_seconds_flag(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end == v.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    throw UsageError(flag + " '" + v + "' is not a number of seconds", true);
  if (x <= 0) throw UsageError(flag + " must be > 0 seconds (got " + v + ")", true);
  if (x > 1e8) throw UsageError(flag + " '" + v + "' is too large", true);
  return x;
}

std::string seconds_text(double s) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

namespace {

// Sets NAME for every rank (a later flag replaces an earlier one).
void set_horovod_env(LaunchOptions* o, const std::string& name, const std::string& value) {
  for (auto& kv : o->horovod_env)
    if (kv.first == name) {
      kv.second = value;
      return;
    }
  o->horovod_env.emplace_back(name, value);
}

// A whole number of seconds in 1..100000000 (./train's limit too), for --gloo-timeout-seconds
// and HOROVOD_* variables.
bool whole_seconds(const std::string& v, int* out) {
  return v.size() <= 9 && parse_decimal_int(v, IntSign::kNone, 1, 100000000, out);
}
const char kSecondsRange[] = "' is not a whole number of seconds from 1 to 100000000";

// --binding-args "...": -bind-to/-map-by values replace the defaults, other words go to mpirun.
void apply_binding_args(const std::string& v, LaunchOptions* o) {
  std::vector<std::string> words;
  std::string why;
  if (!split_shell_words(v, &words, &why)) throw UsageError("--binding-args: " + why, false);
  for (size_t k = 0; k < words.size(); ++k) {
    const std::string& w = words[k];
    bool bind = w == "-bind-to" || w == "--bind-to", map = w == "-map-by" || w == "--map-by";
    if (!bind && !map) {
      o->mpi_args.push_back(w);
      continue;
    }
    if (k + 1 >= words.size() || words[k + 1].empty() || words[k + 1][0] == '-')
      throw UsageError("--binding-args: " + w + " needs a value", false);
    (bind ? o->bind_to : o->map_by) = words[++k];
  }
}

// HOROVOD_* variables horovodrun reads for flags not given on the command line (or in the file).
void read_horovod_env(const EnvLookup& env, const std::vector<std::string>& given, LaunchOptions* o) {
  auto is_given = [&](const char* f) { return std::find(given.begin(), given.end(), f) != given.end(); };
  for (const std::string& line : ignored_env_warnings(env)) o->notices.push_back(line);
  int n = 0;
  const char* v = env("HOROVOD_START_TIMEOUT");
  if (v && *v && !is_given("--start-timeout")) {
    if (!whole_seconds(v, &n)) throw UsageError("HOROVOD_START_TIMEOUT='" + shown_text(v) + kSecondsRange, false);
    o->start_timeout = n;
  }
  v = env("HOROVOD_GLOO_TIMEOUT_SECONDS");
  if (v && *v && !is_given("--gloo-timeout-seconds") && !whole_seconds(v, &n))
    throw UsageError("HOROVOD_GLOO_TIMEOUT_SECONDS='" + shown_text(v) + kSecondsRange, false);
  v = env("HOROVOD_LOG_LEVEL");
  if (v && *v && !is_given("--log-level") && horovod_log_level(v).empty())
    throw UsageError(
        "HOROVOD_LOG_LEVEL='" + shown_text(v) + "' is not one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL", false);
  v = env("HOROVOD_LOG_HIDE_TIME");
  if (v && *v && !is_given("--log-with-timestamp") && std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
    throw UsageError("HOROVOD_LOG_HIDE_TIME='" + shown_text(v) + "' is not 0 or 1", false);
}

// --config-file's bytes: a regular file (never a pipe or a device that could block), <= 1 MiB,
// opened and read as src/safe_file does; the messages are --config-file's own.
std::string read_config_file(const std::string& path) {
  const std::string flag = "--config-file " + shown_text(path) + ": ";
  size_t size = 0;
  ReadRefusal why;
  const int fd = try_open_regular_for_read(path, size_t(1) << 20, &size, &why);
  if (fd < 0 && why.open_errno && !why.mode) throw UsageError(flag + std::strerror(why.open_errno), false);
  if (fd < 0) throw UsageError(flag + "not a regular file of at most 1 MiB", false);
  try {
    return read_open_file(fd, size, path, "--config-file");
  } catch (const SafeFileError& e) {  // "PATH: --config-file grew while it was read"
    throw UsageError(e.what(), false);
  }
}

// One pass over the words. `given` (when not null) collects the horovodrun flags seen, by the
// first name of their table row.
LaunchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env, std::vector<std::string>* given);

}  // namespace

const char* launch_usage_line() {
  return "usage: launch -np N [--gloo|--mpi] [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]";
}

namespace {
const char kHelpText[] =
    "usage: launch -np N [--gloo|--mpi] [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]\n"
    "\n"
    "Starts N ranks of CMD over the hosts' slots (filled in order) and tags their output.\n"
    "\n"
    "  -np, --num-proc N         number of ranks (required, except inside a Slurm allocation:\n"
    "                            there the allocation's task count, see below)\n"
    "  -H, --hosts LIST          host or host:slots, comma separated (default localhost:N)\n"
    "      --hostfile FILE       lines 'host slots=K'; '#' comments\n"
    "      --gloo                start the ranks ourselves (each under launch --agent: local, ssh, srun) with a\n"
    "                            rendezvous store for Gloo\n"
    "      --mpi                 start the ranks with Open MPI's mpirun; every exported variable\n"
    "                            reaches every rank (-x NAME) except host-specific ones (HOSTNAME,\n"
    "                            PWD, OLDPWD, SHLVL, SSH_*, XDG_*, BASH_FUNC_*, DISPLAY, ...)\n"
    "                            Neither given: as horovodrun, --mpi when this build has MPI and\n"
    "                            mpirun is on PATH, else --gloo (elastic jobs: --gloo); one line\n"
    "                            says which\n"
    "  -x VAR[=VALUE]            with --mpi: send VAR (with VALUE, or this shell's value) to\n"
    "                            every rank (repeatable)\n"
    "      --mpi-args \"ARGS\"     with --mpi: extra mpirun arguments, split as a shell would,\n"
    "                            before CMD (repeatable)\n"
    "      --bind-to V           with --mpi: mpirun -bind-to V (default none)\n"
    "      --binding-args \"ARGS\"\n"
    "                            with --mpi: horovodrun's: -bind-to/-map-by values replace the\n"
    "                            defaults, other words go to mpirun\n"
    "      --map-by V            with --mpi: mpirun -map-by V (default slot)\n"
    "  -p, --ssh-port PORT       ssh port (passed to ssh and mpirun)\n"
    "  -i, --ssh-identity-file FILE\n"
    "                            ssh identity file\n"
    "  -F, --ssh-config FILE     ssh config file (default: $BARESGD_SSH_CONFIG if set)\n"
    "      --tag-format FMT      horovod ([0]<stdout>:, default), mpi ([1,0]<stdout>:),\n"
    "                            short ([0]:) or host ([host:0]<stdout>:)\n"
    "      --output-filename DIR\n"
    "                            also write DIR/rank.N/stdout and DIR/rank.N/stderr, N\n"
    "                            zero-padded to sort (rank.00 .. rank.11 for 12 ranks)\n"
    "      --timestamp           prefix each line with the time\n"
    "      --verbose             print the rank table and the commands run\n"
    "      --config-file FILE    horovodrun's YAML config (controller, timeline.filename,\n"
    "                            library_options.gloo_timeout_seconds, logging.level, ...);\n"
    "                            command-line flags win over the file\n"
    "      --gloo-timeout-seconds N  every rank gets HOROVOD_GLOO_TIMEOUT_SECONDS=N: ./train's\n"
    "                            collectives time out after N s (its --comm-timeout default)\n"
    "      --log-level LEVEL     every rank gets HOROVOD_LOG_LEVEL (TRACE .. FATAL)\n"
    "      --log-with-timestamp, --log-without-timestamp  HOROVOD_LOG_HIDE_TIME=0 / 1\n"
    "      --start-timeout SEC   give up when hosts cannot be reached in SEC (default\n"
    "                            $HOROVOD_START_TIMEOUT, else 30)\n"
    "      --timeout SEC         stop the job after SEC seconds (exit 124)\n"
    "      --stop-grace SEC      a stop (SIGTERM/SIGUSR1 to launch, forwarded to every rank;\n"
    "                            --timeout; a failure) SIGKILLs what is left after SEC s\n"
    "                            (default 3): time for ./train's ranks to save their step\n"
    "      --heartbeat-timeout SEC  a remote host whose agent is silent for SEC (default 30;\n"
    "                            0.5..100000) is named, the job's processes there are killed\n"
    "                            over a new ssh and the job stopped (exit 255); an agent that\n"
    "                            hears nothing from the launcher for SEC stops its rank, exits\n"
    "      --heartbeat-interval SEC  heartbeat period both ways (default: SEC/6, at most 5;\n"
    "                            at least 0.05, less than --heartbeat-timeout)\n"
    "      --network-interface(s) IF  bind the store to IF's address; ranks use it (and mpirun's\n"
    "                            btl/oob_tcp_if_include)\n"
    "      --bind-addr ADDR      bind the store to ADDR; local ranks get it as BARESGD_HOST_ADDR\n"
    "                            (an IPv4 address of this machine; 0.0.0.0, broadcast and\n"
    "                            multicast are refused: ranks must connect to it)\n"
    "      --timeline-filename FILE  every rank gets HOROVOD_TIMELINE=FILE (./train records its\n"
    "                            timeline there; as horovodrun); FILE's directory must be\n"
    "                            writable. HOROVOD_TIMELINE set for ./launch reaches every rank\n"
    "                            too (the flag wins)\n"
    "      --max-restarts N      after a job failure (a rank exits non-zero or is killed, a\n"
    "                            host is lost) stop the job as usual, then start it again, up to\n"
    "                            N times (default 0: never), after 1 s, 2 s, 4 s ... (at most\n"
    "                            30 s); a CMD with --checkpoint-dir gets --resume. A clean exit,\n"
    "                            --timeout and a signal to launch never restart\n"
    "      --reset-limit N       the same (Horovod's name)\n"
    "      --min-np N            elastic (Horovod's meaning, --gloo): after a failure the job\n"
    "                            restarts with --resume on the hosts still usable, with as many\n"
    "                            ranks as their slots give (at least N, at most --max-np). A host\n"
    "                            whose ranks failed twice, or that stopped answering, is\n"
    "                            blacklisted. Restarts are unlimited unless --max-restarts says\n"
    "      --max-np N            at most N ranks in an elastic job (default: every usable slot)\n"
    "      --host-discovery-script CMD  elastic: CMD (run by /bin/sh) prints the usable hosts,\n"
    "                            one \"host\" or \"host:slots\" per line; run before every start\n"
    "      --slots-per-host N    slots of a discovered host printed without \":slots\" (default 1)\n"
    "      --elastic-timeout S   how long an elastic job waits for --min-np usable slots before\n"
    "                            it fails (default 600; HOROVOD_ELASTIC_TIMEOUT)\n"
    "      --blacklist-cooldown-range MIN MAX  elastic: a blacklisted host gets ranks again after\n"
    "                            its cooldown, MIN x 2^n + U x MIN s for its nth blacklisting (U\n"
    "                            uniform in [0, 1)), kept within MIN..MAX (1 <= MIN <= MAX <= 3600;\n"
    "                            Horovod's). Without it a blacklisted host stays out\n"
    "      --dry-run             print what would be started (below) and start nothing\n"
    "      --no-srun             with --gloo inside a Slurm allocation: start the ranks locally\n"
    "                            and over ssh, not as job steps through srun (below)\n"
    "  -h, --help                this text\n"
    "  -v, --version             the version and the backends built in (also -cb,\n"
    "                            --check-build)\n"
    "\n"
    "--dry-run prints on stdout, in aligned columns:\n"
    "  the rank table: rank, host, local rank/size, cross rank/size, how the rank starts (local,\n"
    "    ssh or srun) and its address (BARESGD_HOST_ADDR, which Gloo binds);\n"
    "  the environment every rank gets (the BARESGD_*, OMPI_*, HOROVOD_* and\n"
    "    OPENBLAS_NUM_THREADS variables), then a table of the variables that differ per rank;\n"
    "  the command per host: the rank's own command line, the full ssh (or srun) command with\n"
    "    what the agent then runs, or the exact mpirun command for --mpi.\n"
    "  The secret shows as ******; the store's port, the job id and a remote host's core count,\n"
    "  known only when the job starts, as <port>, <job id> and <cores>. Host addresses are read\n"
    "  from the ssh config with `ssh -G` (no connection is made); nothing else runs.\n"
    "  With --max-restarts N > 0, a last line gives the restart policy.\n"
    "\n"
    "Inside a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST set) and without -H or\n"
    "--hostfile, the hosts and their slots are the allocation's (SLURM_JOB_NODELIST,\n"
    "SLURM_TASKS_PER_NODE) and -np defaults to SLURM_NTASKS; a larger -np is refused.\n"
    "With --gloo every rank then starts as a job step of the allocation (srun --overlap ...\n"
    "launch --agent on its node), so scancel stops it and accounting counts it; --no-srun\n"
    "starts them locally and over ssh instead, as -H does. Run ./launch once per job, from the\n"
    "batch script or the salloc shell: as a task of an srun step of more than one task it refuses\n"
    "(every task would start the job), and in a one-task step it refuses to take the step's\n"
    "SLURM_NTASKS for the allocation's (without -np, or a larger -np; -H/--hostfile still work).\n"
    "\n"
    "Exit status: the first failing rank's (128+signal for a signal; with --max-restarts, that of\n"
    "the last attempt's first failure), 124 on --timeout,\n"
    "128+signal when the launcher itself is stopped by a signal (SIGTERM, SIGUSR1, SIGINT and\n"
    "SIGHUP go to every rank; a second one kills the job), 143 or 138 when the ranks stopped\n"
    "on SIGTERM or SIGUSR1 and exited with that status (./train: saved; continue with --resume),\n"
    "2 for a bad command line,\n"
    "1 for other launch errors.\n"
    "\n"
    "horovodrun's flags that are no-ops here (accepted) or refused, and why (docs/horovod.md lists all);\n"
    "a refused flag's HOROVOD_* variable in the environment is ignored, with one warning line:\n";
}  // namespace

const char* launch_help_text() {
  static const std::string text = kHelpText + horovod_flags_help();
  return text.c_str();
}

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  return parse_launch_options(args, process_env);
}

// Flags, then --config-file's keys for the flags not given (their words go first, so the command
// line's win), then the pass again over both.
LaunchOptions parse_launch_options(const std::vector<std::string>& args, const EnvLookup& env) {
  std::vector<std::string> given;
  LaunchOptions o = parse_flags(args, env, &given);
  if (o.help || o.version || o.config_file.empty()) return o;
  ConfigFlags c;
  try {
    c = config_flags(parse_config_text(read_config_file(o.config_file), o.config_file), o.config_file, given);
  } catch (const ConfigError& e) {
    throw UsageError(e.what(), false);
  }
  bool controller_given = std::find(given.begin(), given.end(), "--gloo") != given.end() ||
                          std::find(given.begin(), given.end(), "--mpi") != given.end();
  if (!c.controller.empty() && !controller_given) c.args.push_back(c.controller);
  c.args.insert(c.args.end(), args.begin(), args.end());
  return parse_flags(c.args, env, nullptr);
}

namespace {

// The flag being read: its name, the value written inline (--flag=value) and the words after it.
struct FlagWord {
  const std::vector<std::string>& args;
  size_t& i;                      // args[i] is this flag; need_value() moves it past a separate value
  std::string word, name, value;  // word: the flag as written
  bool has_inline = false;

  FlagWord(const std::vector<std::string>& a, size_t& at) : args(a), i(at), word(a[at]), name(a[at]) {
    if (name.compare(0, 2, "--") != 0) return;
    size_t eq = name.find('=');
    if (eq == std::string::npos) return;
    value = name.substr(eq + 1);
    name = name.substr(0, eq);
    has_inline = true;
  }
  bool is(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (name == n) return true;
    return false;
  }
  std::string need_value() {
    if (has_inline) return value;
    if (i + 1 >= args.size()) throw UsageError(name + " needs a value", true);
    return args[++i];
  }
  void no_value() const {
    if (has_inline) throw UsageError(name + " takes no value", true);
  }
};

// What one pass remembers across flags, besides the options themselves.
struct FlagPass {
  LaunchOptions o;
  std::vector<std::string> seen;  // horovodrun flags given, by row (for HOROVOD_* precedence)
  std::string nic;                // the first --network-interface(s) name
  bool saw_gloo = false, saw_mpi = false;
  std::string restart_flag;  // the first of --max-restarts / --reset-limit given
  std::string mpi_only;      // the first --mpi-only flag given (-x, --mpi-args, --bind-to, --map-by)
  bool elastic_timeout_given = false;
};

// A value that must not be empty: a file, directory or list name.
std::string nonempty_value(FlagWord& f, const std::string& empty_error) {
  std::string v = f.need_value();
  if (v.empty()) throw UsageError(empty_error, true);
  return v;
}

// -np, -H, --hostfile, --gloo, --mpi. Each group function returns whether the flag was its own.
bool ranks_and_hosts_flag(FlagWord& f, FlagPass& p) {
  LaunchOptions& o = p.o;
  if (f.is({"-np", "--num-proc", "-n"})) {
    o.np = parse_int_flag(f.name, f.need_value());
    if (o.np > 65536)
      throw UsageError(f.name + " " + std::to_string(o.np) + " is more ranks than launch supports (65536)", false);
    o.np_given = true;
  } else if (f.is({"-H", "--hosts"})) {
    o.hosts = nonempty_value(f, f.name + ": empty host list");
  } else if (f.is({"--hostfile", "-hostfile"})) {
    o.hostfile = nonempty_value(f, "--hostfile: empty file name");
  } else if (f.is({"--gloo", "--mpi"})) {
    f.no_value();
    (f.name == "--gloo" ? p.saw_gloo : p.saw_mpi) = true;
  } else {
    return false;
  }
  return true;
}

// -p, -i, -F: how ssh reaches the hosts.
bool ssh_flag(FlagWord& f, LaunchOptions& o) {
  if (f.is({"-p", "--ssh-port"})) {
    o.ssh_port = f.need_value();
    int port = parse_int_flag(f.name, o.ssh_port);
    if (port < 1 || port > 65535) throw UsageError(f.name + " must be 1..65535 (got " + o.ssh_port + ")", true);
    o.ssh_port = std::to_string(port);
  } else if (f.is({"-i", "--ssh-identity-file"})) {
    o.ssh_identity = nonempty_value(f, f.name + ": empty file name");
  } else if (f.is({"-F", "--ssh-config"})) {
    o.ssh_config = nonempty_value(f, f.name + ": empty file name");
  } else {
    return false;
  }
  return true;
}

// --tag-format, --output-filename, --timestamp, --verbose, --dry-run: what the launcher prints.
bool output_flag(FlagWord& f, LaunchOptions& o) {
  if (f.is({"--tag-format"})) {
    std::string v = f.need_value();
    if (!parse_tag_format(v, &o.tag_format))
      throw UsageError("--tag-format '" + v + "' is not one of horovod, mpi, short, host", true);
  } else if (f.is({"--output-filename"})) {
    o.output_dir = nonempty_value(f, "--output-filename: empty directory name");
  } else if (f.is({"--timestamp", "--prefix-output-with-timestamp", "-prefix-timestamp"})) {
    f.no_value();
    o.timestamp = true;
  } else if (f.is({"--verbose"})) {
    f.no_value();
    o.verbose = true;
  } else if (f.is({"--dry-run"})) {
    f.no_value();
    o.dry_run = true;
  } else {
    return false;
  }
  return true;
}

// --start-timeout, --timeout, --stop-grace, --heartbeat-timeout, --heartbeat-interval.
bool timeout_flag(FlagWord& f, LaunchOptions& o) {
  if (f.is({"--start-timeout"})) {
    o.start_timeout = parse_seconds_flag(f.name, f.need_value());
  } else if (f.is({"--timeout"})) {
    o.timeout = parse_seconds_flag(f.name, f.need_value());
  } else if (f.is({"--stop-grace"})) {
    std::string v = f.need_value();
    o.stop_grace = parse_seconds_flag(f.name, v);
    if (o.stop_grace < 0.1 || o.stop_grace > 100000)
      throw UsageError("--stop-grace must be 0.1..100000 seconds (got " + v + ")", true);
  } else if (f.is({"--heartbeat-timeout"})) {
    std::string v = f.need_value();
    o.heartbeat_timeout = parse_seconds_flag(f.name, v);
    if (o.heartbeat_timeout < 0.5 || o.heartbeat_timeout > 100000)
      throw UsageError("--heartbeat-timeout must be 0.5..100000 seconds (got " + v + ")", true);
  } else if (f.is({"--heartbeat-interval"})) {
    std::string v = f.need_value();
    o.heartbeat_interval = parse_seconds_flag(f.name, v);
    if (o.heartbeat_interval < 0.05)
      throw UsageError("--heartbeat-interval must be >= 0.05 seconds (got " + v + ")", true);
  } else {
    return false;
  }
  return true;
}

// --network-interface(s): horovodrun's comma list; baresgd binds one interface, so every name
// given (in any of the flags) must be the same.
void network_interface_flag(FlagWord& f, FlagPass& p) {
  std::string v = f.need_value();
  for (size_t b = 0; b <= v.size();) {
    size_t e = std::min(v.find(',', b), v.size());
    std::string one = v.substr(b, e - b);
    if (one.empty()) throw UsageError(f.name + ": empty name", true);
    if (!p.nic.empty() && one != p.nic)
      throw UsageError(f.name + " " + shown_text(one) + " after " + shown_text(p.nic) +
                           ": ./launch binds its store and ranks to one interface; give one",
                       false);
    p.nic = one;
    b = e + 1;
  }
  p.o.network_interface = p.nic;
}

// --network-interface(s), --bind-addr, --no-srun: where the store and the ranks live.
bool network_flag(FlagWord& f, FlagPass& p) {
  if (f.is({"--network-interface", "--network-interfaces"})) {
    network_interface_flag(f, p);
  } else if (f.is({"--bind-addr"})) {
    p.o.bind_addr = nonempty_value(f, "--bind-addr: empty address");
  } else if (f.is({"--no-srun"})) {
    f.no_value();
    p.o.no_srun = true;
  } else {
    return false;
  }
  return true;
}

// -x, --mpi-args, --bind-to, --map-by, --binding-args: mpirun's, refused with --gloo later.
bool mpi_only_flag(FlagWord& f, FlagPass& p) {
  LaunchOptions& o = p.o;
  if (f.is({"-x"})) {
    std::string v = f.need_value();
    std::string var = v.substr(0, v.find('='));
    if (!is_shell_identifier(var))
      throw UsageError("-x '" + shown_text(v) + "': '" + shown_text(var) + "' is not a variable name", false);
    o.mpi_env.push_back(v);
  } else if (f.is({"--mpi-args"})) {
    std::string v = f.need_value(), why;
    std::vector<std::string> words;
    if (!split_shell_words(v, &words, &why)) throw UsageError("--mpi-args: " + why, false);
    o.mpi_args.insert(o.mpi_args.end(), words.begin(), words.end());
  } else if (f.is({"--bind-to", "--map-by"})) {
    std::string v = f.need_value();
    if (v.empty() || v.find_first_of(" \t\n\r") != std::string::npos || v[0] == '-')
      throw UsageError(f.name + " '" + shown_text(v) + "' is not an Open MPI " + f.name.substr(2) + " value", false);
    (f.name == "--bind-to" ? o.bind_to : o.map_by) = v;
  } else if (f.is({"--binding-args"})) {
    apply_binding_args(f.need_value(), &o);
  } else {
    return false;
  }
  if (p.mpi_only.empty()) p.mpi_only = f.name;
  return true;
}

// --config-file, --timeline-filename, --gloo-timeout-seconds, --log-*: horovodrun's settings
// that reach every rank as HOROVOD_* variables (or name the file that holds them).
bool horovod_setting_flag(FlagWord& f, LaunchOptions& o) {
  if (f.is({"--config-file"})) {
    o.config_file = nonempty_value(f, "--config-file: empty file name");
  } else if (f.is({"--timeline-filename"})) {
    o.timeline_file = nonempty_value(f, "--timeline-filename: empty file name");
  } else if (f.is({"--gloo-timeout-seconds"})) {
    std::string v = f.need_value();
    int n = 0;
    if (!whole_seconds(v, &n)) throw UsageError(f.name + " '" + shown_text(v) + kSecondsRange, false);
    set_horovod_env(&o, "HOROVOD_GLOO_TIMEOUT_SECONDS", std::to_string(n));
  } else if (f.is({"--log-level"})) {
    std::string v = f.need_value(), level = horovod_log_level(v);
    if (level.empty())
      throw UsageError(f.name + " '" + shown_text(v) + "' is not one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL",
                       false);
    set_horovod_env(&o, "HOROVOD_LOG_LEVEL", level);
  } else if (f.is({"--log-with-timestamp", "--no-log-hide-timestamp", "--log-without-timestamp",
                   "--log-hide-timestamp"})) {
    f.no_value();
    bool hide = f.is({"--log-without-timestamp", "--log-hide-timestamp"});
    set_horovod_env(&o, "HOROVOD_LOG_HIDE_TIME", hide ? "1" : "0");
  } else {
    return false;
  }
  return true;
}

// --max-restarts / --reset-limit N (the same setting; two that disagree are refused).
void restart_flag(FlagWord& f, FlagPass& p) {
  std::string v = f.need_value();
  int n = 0;
  try {
    n = parse_int_flag(f.name, v);
  } catch (const UsageError& e) {
    throw UsageError(e.what(), false);  // one line: the flag and its value
  }
  if (n < 0) throw UsageError(f.name + " must be >= 0 (got " + v + ")", false);
  if (n > 1000000) throw UsageError(f.name + " " + v + " is more restarts than launch supports (1000000)", false);
  if (!p.restart_flag.empty() && n != p.o.max_restarts)
    throw UsageError(
        f.name + " " + v + " contradicts " + p.restart_flag + " " + std::to_string(p.o.max_restarts) + ": give one",
        false);
  p.restart_flag = f.name;
  p.o.max_restarts = n;
  p.o.restarts_given = true;
}

// --blacklist-cooldown-range MIN MAX: two separate words, as horovodrun's nargs=2 takes them.
void cooldown_flag(FlagWord& f, FlagPass& p) {
  if (f.has_inline) throw UsageError(f.name + " takes two words, MIN MAX, not " + f.name + "=...", false);
  if (f.i + 2 >= f.args.size()) throw UsageError(f.name + " needs two values: MIN MAX seconds", false);
  const std::string min = f.args[++f.i];
  p.o.elastic.cooldown = parse_cooldown_range(min, f.args[++f.i]);
}

// --max-restarts, --reset-limit and the elastic flags (elastic_options.cc): what follows a failure.
bool restart_or_elastic_flag(FlagWord& f, FlagPass& p) {
  if (f.is({"--max-restarts", "--reset-limit"})) {
    restart_flag(f, p);
    return true;
  }
  if (f.is({"--blacklist-cooldown-range"})) {
    cooldown_flag(f, p);
    return true;
  }
  if (!parse_elastic_flag(
          f.name, [&] { return f.need_value(); }, &p.o.elastic))
    return false;
  p.elastic_timeout_given = p.elastic_timeout_given || f.name == "--elastic-timeout";
  return true;
}

// Any other flag: horovodrun's no-ops are accepted, its refused flags and unknown ones are not.
void other_flag(FlagWord& f, const HorovodFlag* row) {
  if (row && row->status == FlagStatus::kRefused) throw UsageError(refusal_line(*row, f.name), false);
  if (row && row->status == FlagStatus::kNoOp) {
    f.no_value();  // horovodrun's meaning is what baresgd does anyway (horovod_flags.cc says why)
    return;
  }
  throw UsageError("unknown option '" + f.word + "'", true);
}

// Records a horovodrun flag (by the first name of its table row) and returns its row, if any.
const HorovodFlag* note_horovod_flag(const std::string& name, std::vector<std::string>* seen) {
  const HorovodFlag* row = find_horovod_flag(name);
  if (row) seen->push_back(row->names[0]);
  if (name == "--log-hide-timestamp" || name == "--no-log-hide-timestamp")  // the same setting
    seen->insert(seen->end(), {"--log-with-timestamp", "--log-without-timestamp"});
  return row;
}

// Neither --gloo nor --mpi: horovodrun's choice (Horovod's horovod/runner/launch.py run_controller:
// MPI when Horovod was built with it, else Gloo; elastic jobs only run on Gloo). Here "built with
// MPI" is this build's MPI backend with an mpirun on PATH to start it. why: the reason, for the
// notice ("when ...").
Transport default_transport(const LaunchOptions& o, const EnvLookup& env, std::string* why) {
  if (o.elastic.enabled()) {
    *why = "for an elastic job";
    return Transport::kGloo;
  }
#if BARESGD_HAVE_MPI
  const char* path = env("PATH");
  std::string not_found;
  const std::string mpirun = find_executable("mpirun", path ? path : "", &not_found);
  if (!mpirun.empty()) {
    *why = "when MPI is built in (mpirun: " + shown_text(mpirun) + ")";
    return Transport::kMpi;
  }
  *why = "when MPI is not available (mpirun is not on PATH)";
#else
  *why = "when MPI is not available (this build has no MPI)";
#endif
  return Transport::kGloo;
}

// The checks across flags, once they are all read (and the environment's defaults are in).
void check_flag_combinations(FlagPass& p, const EnvLookup& env) {
  LaunchOptions& o = p.o;
  if (p.saw_gloo && p.saw_mpi) throw UsageError("--gloo and --mpi are mutually exclusive: pick one", false);
  if (o.np_given && o.np <= 0) throw UsageError("-np must be >= 1 (got " + std::to_string(o.np) + ")", false);
  std::string why;
  if (p.saw_gloo || p.saw_mpi) {
    o.transport = p.saw_gloo ? Transport::kGloo : Transport::kMpi;
  } else {
    o.transport = default_transport(o, env, &why);
    o.notices.push_back(std::string("neither --gloo nor --mpi: using ") +
                        (o.transport == Transport::kMpi ? "--mpi" : "--gloo") + ", as horovodrun does " + why);
  }
  if (o.transport == Transport::kGloo && !p.mpi_only.empty())
    throw UsageError(p.mpi_only + " is for --mpi (mpirun's option); " +
                         (p.saw_gloo ? "with --gloo set variables in the environment"
                                     : "without --gloo or --mpi ./launch picked --gloo " + why),
                     false);
  if (!o.hosts.empty() && !o.hostfile.empty())
    throw UsageError("-H and --hostfile are mutually exclusive: pick one", false);
  if (!o.network_interface.empty() && !o.bind_addr.empty())
    throw UsageError("--network-interface and --bind-addr are mutually exclusive: pick one", false);
  if (o.heartbeat_interval == 0) o.heartbeat_interval = std::min(5.0, o.heartbeat_timeout / 6);
  if (o.heartbeat_interval >= o.heartbeat_timeout)
    throw UsageError("--heartbeat-interval must be shorter than --heartbeat-timeout (" +
                         seconds_text(o.heartbeat_interval) + " >= " + seconds_text(o.heartbeat_timeout) + " s)",
                     false);
  check_elastic_options(o, &o.elastic, p.elastic_timeout_given, env("HOROVOD_ELASTIC_TIMEOUT"));
  if (o.command.empty()) throw UsageError("missing CMD: what should each rank run?", false);
  if (o.command[0].empty()) throw UsageError("CMD is an empty string", false);
}

// Reads the flags up to CMD (or "--") into p; false when --help or --version ends the pass.
bool read_flags(const std::vector<std::string>& args, FlagPass& p, size_t& i) {
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if (args[i].size() < 2 || args[i][0] != '-') break;  // CMD
    FlagWord f(args, i);
    const HorovodFlag* row = note_horovod_flag(f.name, &p.seen);
    if (f.is({"--version", "-v", "--check-build", "-cb"})) {
      f.no_value();
      p.o.version = true;
      return false;
    }
    if (f.is({"-h", "--help"})) {
      p.o.help = true;
      return false;
    }
    if (!ranks_and_hosts_flag(f, p) && !ssh_flag(f, p.o) && !output_flag(f, p.o) && !timeout_flag(f, p.o) &&
        !network_flag(f, p) && !mpi_only_flag(f, p) && !horovod_setting_flag(f, p.o) && !restart_or_elastic_flag(f, p))
      other_flag(f, row);
  }
  return true;
}

LaunchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env, std::vector<std::string>* given) {
  if (args.empty()) throw UsageError("nothing to launch", true);
  FlagPass p;
  size_t i = 0;
  if (!read_flags(args, p, i)) return p.o;
  p.o.command.assign(args.begin() + i, args.end());
  if (given) *given = p.seen;
  if (given && !p.o.config_file.empty()) return p.o;  // checked after the file's flags are in
  read_horovod_env(env, p.seen, &p.o);
  // Defaults for ssh from the environment (so a site or a test can point every launch at its
  // ssh config without editing each command line); flags win.
  if (p.o.ssh_config.empty()) {
    const char* cfg = env("BARESGD_SSH_CONFIG");
    if (cfg && *cfg) p.o.ssh_config = cfg;
  }
  check_flag_combinations(p, env);
  return p.o;
}

}  // namespace
