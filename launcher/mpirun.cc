// mpirun: building Open MPI's mpirun command line and environment for ./launch --mpi.
#include "launcher/mpirun.h"

#include "launcher/env.h"
#include "launcher/shell_words.h"

namespace {

// The launcher's environment without stale per-rank BARESGD_*, plus Open MPI's settings for this
// job (where the user did not choose) and the job's own variables.
std::vector<std::string> mpirun_environment(const MpirunInputs& in, bool* yield_set) {
  std::vector<std::string> env = in.base_env;
  env_remove_if(&env, is_launch_rank_env);
  auto set_default = [&](const std::string& name, const std::string& value) {
    if (!env_find(env, name, nullptr)) env_set(&env, name, value);
  };
  if (!in.network_interface.empty()) {
    set_default("OMPI_MCA_btl_tcp_if_include", in.network_interface);
    set_default("OMPI_MCA_oob_tcp_if_include", in.network_interface);
  }
  // Listeners (docs/deploy.md, "Open MPI's listening sockets"): Open MPI 4.1's tcp BTL binds every
  // rank's two listeners to 0.0.0.0 and [::] whatever btl_tcp_if_include or btl_tcp_disable_family
  // say (they only pick the addresses it publishes). One host needs no tcp BTL: self and shared
  // memory (vader) open no socket at all.
  if (in.hosts.size() == 1) set_default("OMPI_MCA_btl", "self,vader");
  if (in.all_loopback) {
    for (const auto& [name, value] : loopback_openmpi_env())
      if (name != "OMPI_MCA_btl" || in.hosts.size() > 1) set_default(name, value);  // one host: self,vader above
    // Every rank on this machine: Open MPI's own ob1 point-to-point layer (shared memory or tcp
    // underneath). Left to choose, Open MPI also initializes UCX, which probes its transports in
    // MPI_Init and buys nothing inside one host. A job across hosts keeps Open MPI's choice (UCX
    // on InfiniBand); the user's value wins.
    set_default("OMPI_MCA_pml", "ob1");
  }
  for (const std::string& x : in.extra_env) {
    const size_t eq = x.find('=');
    if (eq != std::string::npos) env_set(&env, x.substr(0, eq), x.substr(eq + 1));
  }
  env_set(&env, "BARESGD_COMM", "mpi");
  env_set(&env, "BARESGD_JOB_ID", in.job_id);
  env_set(&env, "BARESGD_SECRET", in.secret);
  set_default("OPENBLAS_NUM_THREADS", std::to_string(in.openblas_threads));
  // More ranks than cores on a host: Open MPI's busy-polling would starve the ranks; yield while
  // idle instead, as it does when it knows.
  *yield_set = in.oversubscribed && !env_find(env, "OMPI_MCA_mpi_yield_when_idle", nullptr);
  if (*yield_set) env_set(&env, "OMPI_MCA_mpi_yield_when_idle", "1");
  return env;
}

// As horovodrun: every exported variable reaches every rank, remote ones too, except the deny list
// (mpirun.h). The four job variables already have their -x.
bool forwarded_with_x(const std::string& entry) {
  std::string name = entry.substr(0, entry.find('='));
  if (name == "BARESGD_COMM" || name == "OPENBLAS_NUM_THREADS") return false;
  return is_shell_identifier(name) && !is_host_specific_env(name) && !is_launch_rank_env(name);
}

std::vector<std::string> mpirun_argv(const MpirunInputs& in, const std::vector<std::string>& env) {
  std::vector<std::string> argv = {"mpirun"};
  if (in.as_root) argv.push_back("--allow-run-as-root");
  std::string hl;
  for (const HostSlots& h : in.hosts) hl += (hl.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  argv.insert(argv.end(),
              {"-np", std::to_string(in.np), "-H", hl, "-bind-to", in.bind_to, "-map-by", in.map_by, "--tag-output",
               "-x", "BARESGD_COMM=mpi", "-x", "OPENBLAS_NUM_THREADS", "-x", "BARESGD_JOB_ID", "-x", "BARESGD_SECRET"});
  for (const std::string& e : env)
    if (forwarded_with_x(e)) argv.insert(argv.end(), {"-x", e.substr(0, e.find('='))});
  std::string rsh = ssh_user_args(in.ssh);
  if (!rsh.empty()) argv.insert(argv.end(), {"-mca", "plm_rsh_args", rsh});
  argv.insert(argv.end(), in.mpi_args.begin(), in.mpi_args.end());
  argv.insert(argv.end(), in.command.begin(), in.command.end());
  return argv;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& loopback_openmpi_env() {
  static const std::vector<std::pair<std::string, std::string>> kEnv = {
      {"OMPI_MCA_btl_tcp_if_include", "lo"},
      {"OMPI_MCA_oob_tcp_if_include", "lo"},
      {"OMPI_MCA_if_base_do_not_resolve", "1"},
      {"OMPI_MCA_btl", "self,tcp"},
  };
  return kEnv;
}

MpirunPlan build_mpirun_plan(const MpirunInputs& in) {
  MpirunPlan p;
  p.env = mpirun_environment(in, &p.yield_set);
  p.argv = mpirun_argv(in, p.env);
  return p;
}
