// train_main: ./train — parses the flags, re-launches through ./launch for --num-proc (as the
// Horovod example does through horovod.run), connects the communicator and runs the job.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <cblas.h>

#include <sys/stat.h>

#include "comm/communicator.h"
#include "comm/emulated_link.h"
#include "kernels/blas.h"
#include "src/data_dir.h"
#include "src/mnist.h"
#include "src/mpi_yield.h"
#include "src/oversubscription.h"
#include "src/options.h"
#include "src/shared_failure.h"
#include "src/stop_signal.h"
#include "src/timeline.h"
#include "src/thread_policy.h"
#include "src/train.h"
#include "src/shown_text.h"
#include "src/program_name.h"
#include "src/version_text.h"

namespace {

// This program's own path (/proc/self/exe), or "./train" when it cannot be read.
std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "./train";
  buf[n] = '\0';
  return buf;
}

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The launcher beside this program: in the build tree ./train finds ./launch; installed,
// baresgd-train finds baresgd-launch (any PREFIX-train finds PREFIX-launch first). The other
// name is the fallback, so a copied or renamed pair still finds each other.
std::string find_launcher(const std::string& exe) {
  const std::string dir = exe.substr(0, exe.rfind('/'));
  const std::string base = exe.substr(exe.rfind('/') + 1);
  const size_t t = base.rfind("train");
  const std::string prefix = t == std::string::npos ? "" : base.substr(0, t);
  for (const std::string& name : {prefix + "launch", std::string("launch"), std::string("baresgd-launch")})
    if (is_file(dir + "/" + name)) return dir + "/" + name;
  return dir + "/" + prefix + "launch";
}

// An installed baresgd-train: `make data` means nothing there.
bool runs_installed(const std::string& exe) { return exe.substr(exe.rfind('/') + 1).rfind("baresgd-", 0) == 0; }

// --data-dir, else $BARESGD_DATA_DIR, else ./data; throws DataError naming where it looked
// when a split's file is in neither candidate directory.
void resolve_data_dir(Options& o) {
  DataDirChoice c = choose_data_dir(o.data_dir_given, o.data_dir, std::getenv("BARESGD_DATA_DIR"));
  o.data_dir = c.dir;
  for (bool train : {true, false}) {
    MnistLookup l = find_mnist(c.dir, train);
    for (int k = 0; k < 2; ++k)
      if (l.found[k].empty())
        throw DataError(
            missing_data_message(c, l.names[k], l.candidates[0], l.candidates[1], runs_installed(self_exe())));
  }
}

// --num-proc N [--hosts H] [--communication gloo|mpi]: exec ./launch with the same flags minus
// these three, as horovod.run does for the original example.
[[noreturn]] void relaunch(const Options& o, const std::vector<std::string>& args) {
  const std::string exe = self_exe();
  std::vector<std::string> argv = {find_launcher(exe), "-np", std::to_string(o.num_proc),
                                   o.communication == "mpi" ? "--mpi" : "--gloo"};
  if (!o.hosts.empty()) argv.insert(argv.end(), {"-H", o.hosts});
  argv.push_back(exe);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool takes_value = a == "--num-proc" || a == "--hosts" || a == "--communication";
    bool inline_value =
        a.rfind("--num-proc=", 0) == 0 || a.rfind("--hosts=", 0) == 0 || a.rfind("--communication=", 0) == 0;
    if (takes_value) {
      ++i;
      continue;
    }
    if (inline_value) continue;
    argv.push_back(a);
  }
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  ::execv(cargv[0], cargv.data());
  std::fprintf(stderr, "train: error: cannot run %s for --num-proc: %s\n", cargv[0], std::strerror(errno));
  std::exit(1);
}

// horovodrun's --gloo-timeout-seconds (./launch's too) reaches the ranks as
// HOROVOD_GLOO_TIMEOUT_SECONDS: the collective timeout unless --comm-timeout is given. False (said
// on stderr) when it is not a whole number of seconds.
bool take_gloo_timeout(const std::vector<std::string>& args, Options* opts) {
  const char* g = std::getenv("HOROVOD_GLOO_TIMEOUT_SECONDS");
  if (!g) return true;
  bool flag = false;
  for (const auto& a : args) flag = flag || a.rfind("--comm-timeout", 0) == 0;
  char* end = nullptr;
  long s = std::strtol(g, &end, 10);
  if (*g && (*end || s < 1 || s > 100000000)) {
    std::fprintf(stderr, "train: error: HOROVOD_GLOO_TIMEOUT_SECONDS='%s' is not a whole number of seconds >= 1\n",
                 shown_text(g).c_str());
    return false;
  }
  if (*g && !flag) opts->comm_timeout = static_cast<double>(s);
  return true;
}

// --help's text under the name this program was started as ("usage: baresgd-train ..." installed).
std::string usage_as_invoked() { return with_program_name(usage_text(), "train", invoked_name("train")); }

// The flags, or the exit code when the program ends here (--version, --help, a usage error,
// a flag this build refuses); -1 to go on.
int parse_command_line(const std::vector<std::string>& args, Options* opts) {
  for (const auto& a : args)
    if (a == "--version") {
      std::fputs(version_text("train").c_str(), stdout);
      return 0;
    }
  try {
    *opts = parse_options(args);
  } catch (const TrainUsageError& e) {
    const std::string usage = usage_as_invoked();
    std::fprintf(stderr, "%strain: error: %s\n", usage.substr(0, usage.find("\n\n") + 1).c_str(), e.message.c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(usage_as_invoked().c_str(), stdout);
    return 0;
  }
  if (!take_gloo_timeout(args, opts)) return 2;
  if (opts->use_mixed_precision) {
    std::fprintf(stderr,
                 "train: error: --use-mixed-precision needs a GPU (as in the original example); "
                 "baresgd trains on the CPU in float32\n");
    return 2;
  }
  return -1;
}

CommOptions comm_options_of(const Options& opts) {
  CommOptions co;
  co.backend = opts.backend;
  co.rendezvous_dir = opts.rendezvous_dir;
  co.job_id = opts.job_id;
  co.network_interface = opts.network_interface;
  co.start_timeout = std::chrono::milliseconds(std::llround(opts.start_timeout * 1000));
  co.comm_timeout = std::chrono::milliseconds(std::llround(opts.comm_timeout * 1000));
  return co;
}

// Compute threads per rank (src/thread_policy.h), decided here once from this process's CPUs, the
// starter's binding and the environment; OpenBLAS is told its own count.
ThreadPolicy thread_policy_of(const Options& opts, const RankInfo& info) {
  ThreadInputs in;
  in.cpus = affinity_cpu_count();
  in.online_cpus = online_cpu_count();
  in.local_size = info.local_size;
  in.threads_flag = opts.threads;
  in.bound_per_task = started_bound_per_task(info.source.c_str(), std::getenv("OMPI_MCA_orte_bound_at_launch"),
                                             std::getenv("SLURM_CPU_BIND_TYPE"));
  in.slurm_cpus_per_task = std::getenv("SLURM_CPUS_PER_TASK");
  in.omp_num_threads = std::getenv("OMP_NUM_THREADS");
  in.openblas_num_threads = std::getenv("OPENBLAS_NUM_THREADS");
  in.goto_num_threads = std::getenv("GOTO_NUM_THREADS");
  const ThreadPolicy policy = decide_thread_policy(in);
  if (policy.blas_threads == 1)
    blas_single_threaded();
  else
    openblas_set_num_threads(policy.blas_threads);
  return policy;
}

// An MPI rank whose host has more ranks than CPUs asks Open MPI to yield when idle
// (src/mpi_yield.h); Open MPI reads the variable in MPI_Init, so this runs before the communicator.
// A rank ./launch did not start (no BARESGD_JOB_ID) says in one line that its host is
// oversubscribed (./launch says it for the whole job).
void say_if_oversubscribed(const CommOptions& co, const RankInfo& info, const ThreadPolicy& threads) {
  std::string yield_line;
  if ((co.backend.empty() ? info.backend : co.backend) == "mpi") {
    const char* name = "OMPI_MCA_mpi_yield_when_idle";
    const MpiYield y = decide_mpi_yield(info.local_size, info.local_rank, threads.host_cpus, std::getenv(name));
    if (y.set) ::setenv(name, "1", 0);
    yield_line = y.line;
  }
  const char* job = std::getenv("BARESGD_JOB_ID");
  std::string line = job && *job
                         ? yield_line
                         : trainer_oversubscribed_line(info.local_size, info.local_rank, threads.host_cpus, yield_line);
  if (!line.empty()) std::fprintf(stderr, "train: %s\n", line.c_str());
}

// --link-delay / --link-bandwidth hold only our algorithms' messages (comm/emulated_link.h): rank 0
// says in one line when the gradient sum does not go through them.
void say_what_the_link_delays(const Options& opts, const Communicator& comm) {
  if ((opts.link_delay_ms <= 0 && opts.link_bytes_per_s <= 0) || comm.rank() != 0) return;
  const bool ours = opts.allreduce == "ring" || opts.allreduce == "halving-doubling" || opts.allreduce == "direct";
  if (!ours || opts.overlap || opts.use_adasum)
    std::fprintf(stderr,
                 "train: --link-delay/--link-bandwidth delay only the messages of --allreduce ring, "
                 "halving-doubling and direct without --overlap on or --use-adasum; this run's gradient "
                 "sum (--allreduce %s) is not delayed\n",
                 opts.allreduce.c_str());
}

// This rank's job: data, timeline file, communicator, training. Exits 1 on any failure with its one
// line on stderr. The communicator (and its connections) must outlive the error message, or peers
// see the dropped connection and the launcher stops us before we print it; so no teardown on a
// failure either: MPI_Finalize after one would wait for peers that are themselves waiting for us
// (the launcher, or mpirun, stops the rest). Returns the exit status: 0, or 128 + the stop signal
// (SIGTERM, SIGUSR1; src/stop_signal.h) after the ranks saved the step they agreed on.
int run_rank(Options& opts) {
  std::unique_ptr<Communicator> comm;
  try {
    install_stop_signal_handlers();  // from here a SIGTERM waits for the first step boundary
    CommOptions co = comm_options_of(opts);
    RankInfo info = discover_rank_info();
    if (!info.notice.empty()) std::fprintf(stderr, "train: %s\n", info.notice.c_str());
    const ThreadPolicy threads = thread_policy_of(opts, info);
    co.spin_while_waiting = threads.spin_while_waiting;
    say_if_oversubscribed(co, info, threads);
    resolve_data_dir(opts);
    TrainData data = load_train_data(opts);  // a bad file fails here, before any rendezvous
    timeline_open(opts, info);               // so does a timeline file this rank cannot write
    comm = emulate_link(make_communicator(co), LinkEmulation{opts.link_delay_ms / 1000, opts.link_bytes_per_s});
    say_what_the_link_delays(opts, *comm);
    install_stop_signal_handlers();  // again: the MPI library may have set its own in MPI_Init
    return run_training(opts, threads, data, *comm, stdout);
  } catch (const PrintedError&) {
    std::_Exit(1);  // its line is on stderr already
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "train: error: %s\n", e.what());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> args(argv + 1, argv + argc);
  Options opts;
  if (const int code = parse_command_line(args, &opts); code >= 0) return code;
  if (opts.num_proc > 0 && std::getenv("BARESGD_RANK") == nullptr && std::getenv("OMPI_COMM_WORLD_RANK") == nullptr)
    relaunch(opts, args);
  return run_rank(opts);
}
