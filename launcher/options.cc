// options: parsing ./launch's flags into LaunchOptions, with one-line errors (see options.h).
#include "launcher/options.h"

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "launcher/shell_words.h"
#include "src/shown_text.h"

namespace {

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

// The value just parsed, as the user wrote it.
std::string value_text(const std::vector<std::string>& args, size_t i, bool inline_value, const std::string& value) {
  return inline_value ? value : args[i];
}

}  // namespace

const char* launch_usage_line() {
  return "usage: launch -np N (--gloo|--mpi) [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]";
}

const char* launch_help_text() {
  return "usage: launch -np N (--gloo|--mpi) [-H host:slots,...|--hostfile FILE] [options] CMD [ARGS...]\n"
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
         "      --map-by V            --mpi: mpirun -map-by V (default slot)\n"
         "  -p, --ssh-port PORT       ssh port (passed to ssh and mpirun)\n"
         "  -i, --ssh-identity-file F ssh identity file\n"
         "  -F, --ssh-config FILE     ssh config file (default: $BARESGD_SSH_CONFIG if set)\n"
         "      --tag-format FMT      horovod ([0]<stdout>:, default), mpi ([1,0]<stdout>:),\n"
         "                            short ([0]:) or host ([host:0]<stdout>:)\n"
         "      --output-filename DIR also write DIR/rank.N/stdout and DIR/rank.N/stderr\n"
         "      --timestamp           prefix each line with the time\n"
         "      --verbose             print the rank table and the commands run\n"
         "      --start-timeout SEC   give up when hosts cannot be reached in SEC (default 30)\n"
         "      --timeout SEC         stop the job after SEC seconds (exit 124)\n"
         "      --heartbeat-timeout SEC  a remote host whose agent is silent for SEC (default 30;\n"
         "                            0.5..100000) is named, the job's processes there are killed\n"
         "                            over a new ssh and the job stopped (exit 255); an agent that\n"
         "                            hears nothing from the launcher for SEC stops its rank, exits\n"
         "      --heartbeat-interval SEC  heartbeat period both ways (default: SEC/6, at most 5;\n"
         "                            at least 0.05, less than --heartbeat-timeout)\n"
         "      --network-interface IF  bind the store to IF's address; ranks use it (and mpirun's\n"
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
         "      --dry-run             print what would be started (below) and start nothing\n"
         "      --no-srun             --gloo inside a Slurm allocation: start the ranks locally and\n"
         "                            over ssh, not as job steps through srun (below)\n"
         "  -h, --help                this text\n"
         "      --version             the version and the backends built in (first flag only)\n"
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
         "1 for other launch errors.\n";
}

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  LaunchOptions o;
  if (args.empty()) throw UsageError("nothing to launch", true);
  bool saw_gloo = false, saw_mpi = false;
  std::string restart_flag;  // the first of --max-restarts / --reset-limit given
  std::string mpi_only;      // the first --mpi-only flag given (-x, --mpi-args, --bind-to, --map-by)
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
    if (name == "-np" || name == "--num-proc" || name == "-n") {
      o.np = parse_int_flag(name, need_value(name));
      if (o.np > 65536) throw UsageError(name + " " + std::to_string(o.np) + " is more ranks than launch supports (65536)", false);
      o.np_given = true;
    } else if (name == "-H" || name == "--hosts") {
      o.hosts = need_value(name);
      if (o.hosts.empty()) throw UsageError(name + ": empty host list", true);
    } else if (name == "--hostfile") {
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
    } else if (name == "--timestamp" || name == "--prefix-output-with-timestamp") {
      no_value(name);
      o.timestamp = true;
    } else if (name == "--verbose" || name == "-v") {
      no_value(name);
      o.verbose = true;
    } else if (name == "--start-timeout") {
      o.start_timeout = parse_seconds_flag(name, need_value(name));
    } else if (name == "--timeout") {
      o.timeout = parse_seconds_flag(name, need_value(name));
    } else if (name == "--heartbeat-timeout") {
      o.heartbeat_timeout = parse_seconds_flag(name, need_value(name));
      if (o.heartbeat_timeout < 0.5 || o.heartbeat_timeout > 100000)
        throw UsageError("--heartbeat-timeout must be 0.5..100000 seconds (got " + value_text(args, i, has_inline, value) + ")", true);
    } else if (name == "--heartbeat-interval") {
      o.heartbeat_interval = parse_seconds_flag(name, need_value(name));
      if (o.heartbeat_interval < 0.05)
        throw UsageError("--heartbeat-interval must be >= 0.05 seconds (got " + value_text(args, i, has_inline, value) + ")", true);
    } else if (name == "--network-interface") {
      o.network_interface = need_value(name);
      if (o.network_interface.empty()) throw UsageError("--network-interface: empty name", true);
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
        throw UsageError(name + " " + v + " contradicts " + restart_flag + " " + std::to_string(o.max_restarts) +
                             ": give one",
                         false);
      restart_flag = name;
      o.max_restarts = n;
    } else if (name == "-h" || name == "--help") {
      o.help = true;
      return o;
    } else {
      throw UsageError("unknown option '" + a + "'", true);
    }
  }
  o.command.assign(args.begin() + i, args.end());
  // Defaults for ssh from the environment (so a site or a test can point every launch at its
  // ssh config without editing each command line); flags win.
  if (o.ssh_config.empty()) {
    const char* env = std::getenv("BARESGD_SSH_CONFIG");
    if (env && *env) o.ssh_config = env;
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
                     seconds_text(o.heartbeat_interval) + " >= " + seconds_text(o.heartbeat_timeout) + " s)", false);
  if (o.command.empty()) throw UsageError("missing CMD: what should each rank run?", false);
  if (o.command[0].empty()) throw UsageError("CMD is an empty string", false);
  return o;
}
