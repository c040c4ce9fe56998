// options: parsing ./launch's flags into LaunchOptions, with one-line errors (see options.h).
#include "launcher/options.h"

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "launcher/horovod_config.h"
#include "launcher/shell_words.h"
#include "src/shown_text.h"

int parse_int_flag(const std::string& flag, const std::string& v) {
  if (v.empty()) throw UsageError(flag + " needs a whole number", true);
  size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
  if (i == v.size()) throw UsageError(flag + " '" + v + "' is not a whole number", true);
  for (size_t k = i; k < v.size(); ++k)
    if (v[k] < '0' || v[k] > '9') throw UsageError(flag + " '" + v + "' is not a whole number", true);
  errno = 0;
  long long x = std::strtoll(v.c_str(), nullptr, 10);
  if (errno == ERANGE || x > INT_MAX || x < INT_MIN) throw UsageError(flag + " '" + v + "' is out of range", true);
  return static_cast<int>(x);
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

// The value just parsed, as the user wrote it.
std::string value_text(const std::vector<std::string>& args, size_t i, bool inline_value, const std::string& value) {
  return inline_value ? value : args[i];
}

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
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::atoi(v.c_str());
  return *out >= 1 && *out <= 100000000;
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
  std::string refused = refused_env_error(env);
  if (!refused.empty()) throw UsageError(refused, false);
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

// --config-file's bytes: a regular file (never a pipe or a device that could block), <= 1 MiB.
std::string read_config_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UsageError("--config-file " + shown_text(path) + ": " + std::strerror(errno), false);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
    close(fd);
    throw UsageError("--config-file " + shown_text(path) + ": not a regular file of at most 1 MiB", false);
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t got = st.st_size ? read(fd, &text[0], text.size()) : 0;
  close(fd);
  if (got < 0) throw UsageError("--config-file " + shown_text(path) + ": " + std::strerror(errno), false);
  text.resize(static_cast<size_t>(got));
  return text;
}

// One pass over the words. `given` (when not null) collects the horovodrun flags seen, by the
// first name of their table row.
LaunchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env, std::vector<std::string>* given);

}  // namespace

const char* launch_usage_line() {
  return "usage: launch -np N (--gloo|--mpi) [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]";
}

namespace {
const char kHelpText[] =
    "usage: launch -np N (--gloo|--mpi) [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]\n"
    "\n"
    "Starts N ranks of CMD over the hosts' slots (filled in order) and tags their output.\n"
    "\n"
    "  -np, --num-proc N         number of ranks (required, except inside a Slurm allocation:\n"
    "                            there the allocation's task count, see below)\n"
    "  -H, --hosts LIST          host or host:slots, comma separated (default localhost:N)\n"
    "      --hostfile FILE       lines 'host slots=K'; '#' comments\n"
    "      --gloo                start the ranks ourselves (local fork, ssh + agent) with a\n"
    "                            rendezvous store for Gloo\n"
    "      --mpi                 start the ranks with Open MPI's mpirun; every exported variable\n"
    "                            reaches every rank (-x NAME) except host-specific ones (HOSTNAME,\n"
    "                            PWD, OLDPWD, SHLVL, SSH_*, XDG_*, BASH_FUNC_*, DISPLAY, ...)\n"
    "  -x VAR[=VALUE]            --mpi: send VAR (with VALUE, or this shell's value) to every\n"
    "                            rank (repeatable)\n"
    "      --mpi-args \"ARGS\"     --mpi: extra mpirun arguments, split as a shell would,\n"
    "                            before CMD (repeatable)\n"
    "      --bind-to V           --mpi: mpirun -bind-to V (default none)\n"
    "      --binding-args \"ARGS\" --mpi: horovodrun's: -bind-to/-map-by values replace the\n"
    "                            defaults, other words go to mpirun\n"
    "      --map-by V            --mpi: mpirun -map-by V (default slot)\n"
    "  -p, --ssh-port PORT       ssh port (passed to ssh and mpirun)\n"
    "  -i, --ssh-identity-file F ssh identity file\n"
    "  -F, --ssh-config FILE     ssh config file (default: $BARESGD_SSH_CONFIG if set)\n"
    "      --tag-format FMT      horovod ([0]<stdout>:, default), mpi ([1,0]<stdout>:),\n"
    "                            short ([0]:) or host ([host:0]<stdout>:)\n"
    "      --output-filename DIR also write DIR/rank.N/stdout and DIR/rank.N/stderr, N\n"
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
    "      --dry-run             print what would be started (below) and start nothing\n"
    "      --no-srun             --gloo inside a Slurm allocation: start the ranks locally and\n"
    "                            over ssh, not as job steps through srun (below)\n"
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
    "starts them locally and over ssh instead, as -H does.\n"
    "\n"
    "Exit status: the first failing rank's (128+signal for a signal; with --max-restarts, that of\n"
    "the last attempt's first failure), 124 on --timeout,\n"
    "128+signal when the launcher itself is stopped by a signal, 2 for a bad command line,\n"
    "1 for other launch errors.\n"
    "\n"
    "horovodrun's flags that are no-ops here (accepted) or refused, and why (README.md lists all):\n";
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

LaunchOptions parse_flags(const std::vector<std::string>& args, const EnvLookup& env, std::vector<std::string>* given) {
  LaunchOptions o;
  std::vector<std::string> seen;  // horovodrun flags given, by row (for HOROVOD_* precedence)
  std::string nic;                // the first --network-interface(s) name
  if (args.empty()) throw UsageError("nothing to launch", true);
  bool saw_gloo = false, saw_mpi = false;
  std::string restart_flag;  // the first of --max-restarts / --reset-limit given
  std::string mpi_only;      // the first --mpi-only flag given (-x, --mpi-args, --bind-to, --map-by)
  bool elastic_timeout_given = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // CMD
    std::string name = a, value;
    bool has_inline = false;
    if (a.compare(0, 2, "--") == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_inline = true;
      }
    }
    auto need_value = [&](const std::string& flag) -> std::string {
      if (has_inline) return value;
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value", true);
      return args[++i];
    };
    auto no_value = [&](const std::string& flag) {
      if (has_inline) throw UsageError(flag + " takes no value", true);
    };
    const HorovodFlag* row = find_horovod_flag(name);
    if (row) seen.push_back(row->names[0]);
    if (name == "--log-hide-timestamp" || name == "--no-log-hide-timestamp")  // the same setting
      seen.insert(seen.end(), {"--log-with-timestamp", "--log-without-timestamp"});
    if (name == "-np" || name == "--num-proc" || name == "-n") {
      o.np = parse_int_flag(name, need_value(name));
      if (o.np > 65536)
        throw UsageError(name + " " + std::to_string(o.np) + " is more ranks than launch supports (65536)", false);
      o.np_given = true;
    } else if (name == "-H" || name == "--hosts") {
      o.hosts = need_value(name);
      if (o.hosts.empty()) throw UsageError(name + ": empty host list", true);
    } else if (name == "--hostfile" || name == "-hostfile") {
      o.hostfile = need_value(name);
      if (o.hostfile.empty()) throw UsageError("--hostfile: empty file name", true);
    } else if (name == "--gloo") {
      no_value(name);
      saw_gloo = true;
    } else if (name == "--mpi") {
      no_value(name);
      saw_mpi = true;
    } else if (name == "-p" || name == "--ssh-port") {
      o.ssh_port = need_value(name);
      int p = parse_int_flag(name, o.ssh_port);
      if (p < 1 || p > 65535) throw UsageError(name + " must be 1..65535 (got " + o.ssh_port + ")", true);
      o.ssh_port = std::to_string(p);
    } else if (name == "-i" || name == "--ssh-identity-file") {
      o.ssh_identity = need_value(name);
      if (o.ssh_identity.empty()) throw UsageError(name + ": empty file name", true);
    } else if (name == "-F" || name == "--ssh-config") {
      o.ssh_config = need_value(name);
      if (o.ssh_config.empty()) throw UsageError(name + ": empty file name", true);
    } else if (name == "--tag-format") {
      std::string v = need_value(name);
      if (!parse_tag_format(v, &o.tag_format))
        throw UsageError("--tag-format '" + v + "' is not one of horovod, mpi, short, host", true);
    } else if (name == "--output-filename") {
      o.output_dir = need_value(name);
      if (o.output_dir.empty()) throw UsageError("--output-filename: empty directory name", true);
    } else if (name == "--timestamp" || name == "--prefix-output-with-timestamp" || name == "-prefix-timestamp") {
      no_value(name);
      o.timestamp = true;
    } else if (name == "--verbose") {
      no_value(name);
      o.verbose = true;
    } else if (name == "--start-timeout") {
      o.start_timeout = parse_seconds_flag(name, need_value(name));
    } else if (name == "--timeout") {
      o.timeout = parse_seconds_flag(name, need_value(name));
    } else if (name == "--heartbeat-timeout") {
      o.heartbeat_timeout = parse_seconds_flag(name, need_value(name));
      if (o.heartbeat_timeout < 0.5 || o.heartbeat_timeout > 100000)
        throw UsageError(
            "--heartbeat-timeout must be 0.5..100000 seconds (got " + value_text(args, i, has_inline, value) + ")",
            true);
    } else if (name == "--heartbeat-interval") {
      o.heartbeat_interval = parse_seconds_flag(name, need_value(name));
      if (o.heartbeat_interval < 0.05)
        throw UsageError(
            "--heartbeat-interval must be >= 0.05 seconds (got " + value_text(args, i, has_inline, value) + ")", true);
    } else if (name == "--network-interface" || name == "--network-interfaces") {
      std::string v = need_value(name);
      for (size_t b = 0; b <= v.size();) {  // horovodrun's comma list; baresgd binds one interface
        size_t e = std::min(v.find(',', b), v.size());
        std::string one = v.substr(b, e - b);
        if (one.empty()) throw UsageError(name + ": empty name", true);
        if (!nic.empty() && one != nic)
          throw UsageError(name + " " + shown_text(one) + " after " + shown_text(nic) +
                               ": ./launch binds its store and ranks to one interface; give one",
                           false);
        nic = one;
        b = e + 1;
      }
      o.network_interface = nic;
    } else if (name == "--bind-addr") {
      o.bind_addr = need_value(name);
      if (o.bind_addr.empty()) throw UsageError("--bind-addr: empty address", true);
    } else if (name == "--timeline-filename") {
      o.timeline_file = need_value(name);
      if (o.timeline_file.empty()) throw UsageError("--timeline-filename: empty file name", true);
    } else if (name == "-x") {
      std::string v = need_value(name);
      std::string var = v.substr(0, v.find('='));
      if (!is_shell_identifier(var))
        throw UsageError("-x '" + shown_text(v) + "': '" + shown_text(var) + "' is not a variable name", false);
      o.mpi_env.push_back(v);
      mpi_only = mpi_only.empty() ? name : mpi_only;
    } else if (name == "--mpi-args") {
      std::string v = need_value(name), why;
      std::vector<std::string> words;
      if (!split_shell_words(v, &words, &why)) throw UsageError("--mpi-args: " + why, false);
      o.mpi_args.insert(o.mpi_args.end(), words.begin(), words.end());
      mpi_only = mpi_only.empty() ? name : mpi_only;
    } else if (name == "--bind-to" || name == "--map-by") {
      std::string v = need_value(name);
      if (v.empty() || v.find_first_of(" \t\n\r") != std::string::npos || v[0] == '-')
        throw UsageError(name + " '" + shown_text(v) + "' is not an Open MPI " + name.substr(2) + " value", false);
      (name == "--bind-to" ? o.bind_to : o.map_by) = v;
      mpi_only = mpi_only.empty() ? name : mpi_only;
    } else if (name == "--binding-args") {
      apply_binding_args(need_value(name), &o);
      mpi_only = mpi_only.empty() ? name : mpi_only;
    } else if (name == "--config-file") {
      o.config_file = need_value(name);
      if (o.config_file.empty()) throw UsageError("--config-file: empty file name", true);
    } else if (name == "--gloo-timeout-seconds") {
      std::string v = need_value(name);
      int n = 0;
      if (!whole_seconds(v, &n)) throw UsageError(name + " '" + shown_text(v) + kSecondsRange, false);
      set_horovod_env(&o, "HOROVOD_GLOO_TIMEOUT_SECONDS", std::to_string(n));
    } else if (name == "--log-level") {
      std::string v = need_value(name), level = horovod_log_level(v);
      if (level.empty())
        throw UsageError(name + " '" + shown_text(v) + "' is not one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL",
                         false);
      set_horovod_env(&o, "HOROVOD_LOG_LEVEL", level);
    } else if (name == "--log-with-timestamp" || name == "--no-log-hide-timestamp" ||
               name == "--log-without-timestamp" || name == "--log-hide-timestamp") {
      no_value(name);
      bool hide = name == "--log-without-timestamp" || name == "--log-hide-timestamp";
      set_horovod_env(&o, "HOROVOD_LOG_HIDE_TIME", hide ? "1" : "0");
    } else if (name == "--version" || name == "-v" || name == "--check-build" || name == "-cb") {
      no_value(name);
      o.version = true;
      return o;
    } else if (name == "--dry-run") {
      no_value(name);
      o.dry_run = true;
    } else if (name == "--no-srun") {
      no_value(name);
      o.no_srun = true;
    } else if (name == "--max-restarts" || name == "--reset-limit") {
      std::string v = need_value(name);
      int n = 0;
      try {
        n = parse_int_flag(name, v);
      } catch (const UsageError& e) {
        throw UsageError(e.what(), false);  // one line: the flag and its value
      }
      if (n < 0) throw UsageError(name + " must be >= 0 (got " + v + ")", false);
      if (n > 1000000) throw UsageError(name + " " + v + " is more restarts than launch supports (1000000)", false);
      if (!restart_flag.empty() && n != o.max_restarts)
        throw UsageError(
            name + " " + v + " contradicts " + restart_flag + " " + std::to_string(o.max_restarts) + ": give one",
            false);
      restart_flag = name;
      o.max_restarts = n;
      o.restarts_given = true;
    } else if (name == "-h" || name == "--help") {
      o.help = true;
      return o;
    } else if (parse_elastic_flag(
                   name, [&] { return need_value(name); }, &o.elastic)) {
      elastic_timeout_given = elastic_timeout_given || name == "--elastic-timeout";
    } else if (row && row->status == FlagStatus::kRefused) {
      throw UsageError(refusal_line(*row, name), false);
    } else if (row && row->status == FlagStatus::kNoOp) {
      no_value(name);  // horovodrun's meaning is what baresgd does anyway (horovod_flags.cc says why)
    } else {
      throw UsageError("unknown option '" + a + "'", true);
    }
  }
  o.command.assign(args.begin() + i, args.end());
  if (given) *given = seen;
  if (given && !o.config_file.empty()) return o;  // checked after the file's flags are in
  read_horovod_env(env, seen, &o);
  // Defaults for ssh from the environment (so a site or a test can point every launch at its
  // ssh config without editing each command line); flags win.
  if (o.ssh_config.empty()) {
    const char* cfg = env("BARESGD_SSH_CONFIG");
    if (cfg && *cfg) o.ssh_config = cfg;
  }

  if (saw_gloo && saw_mpi) throw UsageError("--gloo and --mpi are mutually exclusive: pick one", false);
  if (o.np_given && o.np <= 0) throw UsageError("-np must be >= 1 (got " + std::to_string(o.np) + ")", false);
  if (!saw_gloo && !saw_mpi) throw UsageError("choose how to start the ranks: --gloo or --mpi", false);
  o.transport = saw_gloo ? Transport::kGloo : Transport::kMpi;
  if (saw_gloo && !mpi_only.empty())
    throw UsageError(mpi_only + " is for --mpi (mpirun's option); with --gloo set variables in the environment", false);
  if (!o.hosts.empty() && !o.hostfile.empty())
    throw UsageError("-H and --hostfile are mutually exclusive: pick one", false);
  if (!o.network_interface.empty() && !o.bind_addr.empty())
    throw UsageError("--network-interface and --bind-addr are mutually exclusive: pick one", false);
  if (o.heartbeat_interval == 0) o.heartbeat_interval = std::min(5.0, o.heartbeat_timeout / 6);
  if (o.heartbeat_interval >= o.heartbeat_timeout)
    throw UsageError("--heartbeat-interval must be shorter than --heartbeat-timeout (" +
                         seconds_text(o.heartbeat_interval) + " >= " + seconds_text(o.heartbeat_timeout) + " s)",
                     false);
  check_elastic_options(o, &o.elastic, elastic_timeout_given, env("HOROVOD_ELASTIC_TIMEOUT"));
  if (o.command.empty()) throw UsageError("missing CMD: what should each rank run?", false);
  if (o.command[0].empty()) throw UsageError("CMD is an empty string", false);
  return o;
}

}  // namespace
