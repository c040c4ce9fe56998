// job: ./launch's start-up sequence for --gloo and --mpi (see job.h).
#include "launcher/job.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "comm/store_protocol.h"
#include "launcher/agent_protocol.h"
#include "launcher/hosts.h"
#include "launcher/mpirun.h"
#include "launcher/netaddr.h"
#include "launcher/options.h"
#include "launcher/output.h"
#include "launcher/spawn.h"
#include "launcher/store_server.h"
#include "launcher/supervisor.h"
#include "launcher/watchdog.h"

using Clock = std::chrono::steady_clock;

namespace {

void say(const std::string& msg) {
  std::string line = "launch: " + msg + "\n";
  write_all(2, line);
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// Reaps what is left (killed leftovers that came to us as subreaper), waiting at most ~200 ms.
void reap_leftovers() {
  for (int i = 0; i < 20; ++i) {
    pid_t w;
    while ((w = waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (w < 0) return;  // ECHILD: none left
    usleep(10 * 1000);
  }
}

struct HostInfo {
  std::string name;
  bool local = true;
  std::string addr;  // BARESGD_HOST_ADDR
};

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

void print_rank_table(const std::vector<RankPlacement>& layout, const std::vector<HostInfo>& hosts) {
  size_t hw = 4;
  for (const auto& h : hosts) hw = std::max(hw, h.name.size());
  say(pad("rank", 6) + pad("host", hw + 2) + pad("local", 8) + pad("cross", 8) + pad("via", 7) + "address");
  for (const RankPlacement& p : layout) {
    const HostInfo& h = hosts[p.host_index];
    say(pad(std::to_string(p.rank), 6) + pad(h.name, hw + 2) +
        pad(std::to_string(p.local_rank) + "/" + std::to_string(p.local_size), 8) +
        pad(std::to_string(p.cross_rank) + "/" + std::to_string(p.cross_size), 8) + pad(h.local ? "local" : "ssh", 7) +
        h.addr);
  }
}

}  // namespace

bool is_host_specific_env(const std::string& name) {
  static const std::set<std::string> kExact = {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "DISPLAY",
                                               "XAUTHORITY", "TERMCAP", "WINDOWID", "TMUX", "TMUX_PANE",
                                               "STY", "PS1", "PROMPT_COMMAND", "MAIL"};
  if (kExact.count(name)) return true;
  if (name.compare(0, 4, "SSH_") == 0) return true;
  if (name.compare(0, 10, "BASH_FUNC_") == 0) return true;
  if (name.compare(0, 4, "XDG_") == 0) return true;
  return false;
}

int run_launch(const std::vector<std::string>& args) {
  // ---- 1. Command line ----
  LaunchOptions o;
  try {
    o = parse_launch_options(args);
  } catch (const UsageError& e) {
    say(e.what());
    if (e.show_usage) write_all(2, std::string(launch_usage_line()) + "\n");
    return 2;
  }
  if (o.help) {
    write_all(1, launch_help_text());
    return 0;
  }
  std::vector<RankPlacement> layout;
  std::vector<HostSlots> host_list;
  try {
    if (!o.hostfile.empty()) host_list = read_hostfile(o.hostfile);
    else if (!o.hosts.empty()) host_list = parse_host_list(o.hosts);
    else host_list = {{"localhost", o.np}};
    layout = layout_ranks(host_list, o.np);
  } catch (const HostError& e) {
    say(e.what());
    return 2;
  }
  std::vector<HostSlots> used = used_hosts(layout);

  const char* path_env = getenv("PATH");
  std::string why;
  std::string cmd_path = find_executable(o.command[0], path_env ? path_env : "", &why);
  if (cmd_path.empty()) {
    say("CMD '" + o.command[0] + "': " + why);
    return 2;
  }
  if (o.transport == Transport::kMpi) {
    for (const std::string* f : {&o.ssh_config, &o.ssh_identity})
      if (f->find_first_of(" \t\n") != std::string::npos) {
        say("--mpi: ssh file '" + *f + "' contains whitespace, which mpirun's plm_rsh_args cannot carry");
        return 2;
      }
  }

  // ---- 2. Hosts: local or ssh, and their addresses ----
  SshOptions ssh;
  ssh.port = o.ssh_port;
  ssh.identity = o.ssh_identity;
  ssh.config = o.ssh_config;
  ssh.connect_timeout = std::max(1, std::min(10, static_cast<int>(o.start_timeout)));
  std::string me = this_hostname();
  std::vector<HostInfo> hosts;
  bool all_loopback = true;
  std::string first_remote_routable;
  try {
    for (const HostSlots& h : used) {
      HostInfo hi;
      hi.name = h.name;
      hi.local = is_local_host_name(h.name, me);
      if (!hi.local) {
        std::string target = ssh_config_hostname(ssh, h.name);
        hi.addr = resolve_ipv4(target);
        if (!is_loopback_ipv4(hi.addr)) {
          all_loopback = false;
          if (first_remote_routable.empty()) first_remote_routable = hi.addr;
        }
      }
      hosts.push_back(hi);
    }
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
  std::string bind_addr = "127.0.0.1";
  try {
    if (!o.bind_addr.empty()) {
      if (!is_ipv4_literal(o.bind_addr)) throw std::runtime_error("--bind-addr '" + o.bind_addr + "' is not an IPv4 address");
      bind_addr = o.bind_addr;
    } else if (!o.network_interface.empty()) {
      bind_addr = interface_ipv4(o.network_interface);
    } else if (!all_loopback) {
      bind_addr = route_source_ipv4(first_remote_routable);
    }
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
  for (HostInfo& h : hosts)
    if (h.local) h.addr = bind_addr;

  // ---- 3. Output ----
  OutputSink sink(o.tag_format, o.timestamp);
  {
    std::vector<std::string> host_of_rank;
    for (const RankPlacement& p : layout) host_of_rank.push_back(p.host);
    sink.set_hosts(host_of_rank);
  }
  if (!o.output_dir.empty()) {
    try {
      sink.open_files(o.output_dir, o.np);
    } catch (const std::exception& e) {
      say(e.what());
      return 1;
    }
  }
  if (o.verbose) print_rank_table(layout, hosts);

  // ---- 4. Signals, orphan handling, reachability ----
  install_launcher_signal_handlers();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  Watchdog watchdog;
  try {
    watchdog.start(2000);
  } catch (const std::exception& e) {
    say(std::string("cannot start the watchdog: ") + e.what());
    return 1;
  }
  auto start = Clock::now();
  std::vector<std::string> remote_names;
  for (const HostInfo& h : hosts)
    if (!h.local) remote_names.push_back(h.name);
  if (!remote_names.empty()) {
    if (o.verbose) say("checking " + std::to_string(remote_names.size()) + " host(s) over ssh");
    auto deadline = start + std::chrono::milliseconds(static_cast<long>(o.start_timeout * 1000));
    std::vector<std::string> res =
        check_ssh_hosts(ssh, remote_names, deadline, [] { return launcher_stop_signal() != 0; });
    bool bad = false;
    for (size_t k = 0; k < res.size() && !launcher_stop_signal(); ++k) {
      if (res[k].empty()) continue;
      say("cannot reach " + remote_names[k] + " over ssh: " + res[k]);
      bad = true;
    }
    if (bad && !launcher_stop_signal()) return 1;
  }
  if (int sig = launcher_stop_signal()) {
    say("received " + signal_name(sig) + " before the job started");
    return 128 + sig;
  }

  // ---- 5. Job identity ----
  std::string secret, job_id, nonce;
  try {
    secret = random_secret_hex();
    job_id = to_hex(random_bytes(8));
    nonce = to_hex(random_bytes(8));
  } catch (const std::exception& e) {
    say(std::string("cannot make the job secret: ") + e.what());
    return 1;
  }
  std::string cwd;
  {
    char buf[4096];
    if (getcwd(buf, sizeof buf)) cwd = buf;
  }
  std::string self = self_exe_path();
  std::vector<std::string> base_env = current_environment();
  std::string user_blas;
  bool user_set_blas = env_find(base_env, "OPENBLAS_NUM_THREADS", &user_blas) != nullptr;
  int cores = cpu_count();

  SupervisorConfig scfg;
  scfg.timeout_s = o.timeout;
  scfg.grace_ms = 3000;
  scfg.nonce = nonce;
  Supervisor sup(&sink, &watchdog, scfg);

  // ---- 6a. MPI ----
  if (o.transport == Transport::kMpi) {
    std::string mpirun = find_executable("mpirun", path_env ? path_env : "", &why);
    if (mpirun.empty()) {
      say("--mpi: mpirun not found in PATH (install Open MPI: apt-get install openmpi-bin)");
      return 1;
    }
    MpirunInputs in;
    in.np = o.np;
    in.hosts = used;
    in.command = o.command;
    in.base_env = base_env;
    in.ssh = ssh;
    in.as_root = geteuid() == 0;
    in.all_loopback = all_loopback;
    in.network_interface = o.network_interface;
    int max_local = 1;
    for (const HostSlots& h : used) max_local = std::max(max_local, h.slots);
    in.openblas_threads = std::max(1, cores / max_local);
    // Loopback "hosts" all share this machine's cores.
    in.oversubscribed = all_loopback ? o.np > cores : max_local > cores;
    in.job_id = job_id;
    in.secret = secret;
    MpirunPlan plan = build_mpirun_plan(in);
    if (o.verbose) say("running: " + display_command(plan.argv));
    SpawnSpec spec;
    spec.path = mpirun;
    spec.argv = plan.argv;
    spec.env = plan.env;
    spec.pdeathsig = SIGTERM;  // mpirun tears its job down on SIGTERM
    try {
      sup.add_mpirun(spawn_process(spec));
    } catch (const std::exception& e) {
      say(e.what());
      return 1;
    }
    int code = sup.run();
    watchdog.stop();
    reap_leftovers();
    return code;
  }

  // ---- 6b. Gloo: store, then ranks ----
  std::unique_ptr<StoreServer> store;
  try {
    store = std::make_unique<StoreServer>(bind_addr, 0, secret);
    store->start();
  } catch (const std::exception& e) {
    say(std::string("cannot start the rendezvous store: ") + e.what());
    return 1;
  }
  std::string store_addr = bind_addr + ":" + std::to_string(store->port());
  if (o.verbose) say("store listening on " + store_addr + " (job " + job_id + ")");

  std::vector<std::string> local_env = base_env;
  env_remove_if(&local_env, is_launch_rank_env);
  std::vector<std::string> remote_env = local_env;
  env_remove_if(&remote_env, is_host_specific_env);

  int code = -1;
  for (const RankPlacement& p : layout) {
    const HostInfo& h = hosts[p.host_index];
    std::vector<std::pair<std::string, std::string>> vars = {
        {"BARESGD_RANK", std::to_string(p.rank)},
        {"BARESGD_SIZE", std::to_string(p.size)},
        {"BARESGD_LOCAL_RANK", std::to_string(p.local_rank)},
        {"BARESGD_LOCAL_SIZE", std::to_string(p.local_size)},
        {"BARESGD_CROSS_RANK", std::to_string(p.cross_rank)},
        {"BARESGD_CROSS_SIZE", std::to_string(p.cross_size)},
        {"BARESGD_COMM", "gloo"},
        {"BARESGD_HOSTNAME", h.name},
        {"BARESGD_HOST_ADDR", h.addr},
        {"BARESGD_STORE_ADDR", store_addr},
        {"BARESGD_SECRET", secret},
        {"BARESGD_JOB_ID", job_id},
    };
    try {
      if (h.local) {
        SpawnSpec spec;
        spec.path = cmd_path;
        spec.argv = o.command;
        spec.env = local_env;
        for (auto& kv : vars) env_set(&spec.env, kv.first, kv.second);
        if (!user_set_blas) env_set(&spec.env, "OPENBLAS_NUM_THREADS", std::to_string(std::max(1, cores / p.local_size)));
        if (o.verbose) say("rank " + std::to_string(p.rank) + ": " + display_command(o.command));
        sup.add_local(p.rank, h.name, spawn_process(spec));
      } else {
        AgentRequest req;
        req.nonce = nonce;
        req.openblas_local_size = user_set_blas ? 0 : p.local_size;
        req.env = remote_env;
        for (auto& kv : vars) env_set(&req.env, kv.first, kv.second);
        req.argv = o.command;
        SpawnSpec spec;
        SshOptions rank_ssh = ssh;
        spec.argv = ssh_base_argv(rank_ssh);
        spec.argv.push_back("-T");
        spec.argv.push_back(h.name);
        spec.argv.push_back("cd " + shell_quote(cwd) + " && exec " + shell_quote(self) + " --agent");
        std::string ssh_path = find_executable("ssh", path_env ? path_env : "", &why);
        if (ssh_path.empty()) throw std::runtime_error("ssh not found in PATH");
        spec.path = ssh_path;
        spec.env = base_env;
        spec.stdin_pipe = true;
        spec.pdeathsig = SIGTERM;
        if (o.verbose)
          say("rank " + std::to_string(p.rank) + ": " + display_command(spec.argv) + "  (agent runs: " +
              display_command(o.command) + ")");
        sup.add_remote(p.rank, h.name, spawn_process(spec), encode_agent_request(req));
      }
    } catch (const std::exception& e) {
      code = sup.abort_start("launch: cannot start rank " + std::to_string(p.rank) + " on " + h.name + ": " + e.what(), 1);
      break;
    }
  }
  if (code < 0) code = sup.run();
  store->stop();
  watchdog.stop();
  reap_leftovers();
  return code;
}
