// mpirun: building Open MPI's mpirun command line and environment for ./launch --mpi.
#include "launcher/mpirun.h"

#include "launcher/env.h"

MpirunPlan build_mpirun_plan(const MpirunInputs& in) {
  MpirunPlan p;
  p.env = in.base_env;
  env_remove_if(&p.env, is_launch_rank_env);
  auto set_default = [&](const std::string& name, const std::string& value) {
    if (!env_find(p.env, name, nullptr)) env_set(&p.env, name, value);
  };
  if (!in.network_interface.empty()) {
    set_default("OMPI_MCA_btl_tcp_if_include", in.network_interface);
    set_default("OMPI_MCA_oob_tcp_if_include", in.network_interface);
  } else if (in.all_loopback) {
    set_default("OMPI_MCA_btl_tcp_if_include", "lo");
    set_default("OMPI_MCA_oob_tcp_if_include", "lo");
  }
  if (in.all_loopback) {
    set_default("OMPI_MCA_if_base_do_not_resolve", "1");
    // Several "hosts" on one machine crash Open MPI's shared-memory BTL: use tcp.
    if (in.hosts.size() > 1) set_default("OMPI_MCA_btl", "self,tcp");
    // Every rank on this machine: Open MPI's own ob1 point-to-point layer (shared memory or tcp
    // underneath). Left to choose, Open MPI also initializes UCX, which probes its transports in
    // MPI_Init (0.2 s of a 0.26 s start-up here, and ~1 MB per rank) and buys nothing inside one
    // host. A job across hosts keeps Open MPI's choice (UCX on InfiniBand); the user's value wins.
    set_default("OMPI_MCA_pml", "ob1");
  }
  env_set(&p.env, "BARESGD_COMM", "mpi");
  env_set(&p.env, "BARESGD_JOB_ID", in.job_id);
  env_set(&p.env, "BARESGD_SECRET", in.secret);
  set_default("OPENBLAS_NUM_THREADS", std::to_string(in.openblas_threads));
  // More ranks than cores on a host: Open MPI's busy-polling would starve the ranks (measured
  // 14x slower for 4 ranks on 2 cores); yield while idle instead, as it does when it knows.
  if (in.oversubscribed) set_default("OMPI_MCA_mpi_yield_when_idle", "1");

  p.argv = {"mpirun"};
  if (in.as_root) p.argv.push_back("--allow-run-as-root");
  std::string hl;
  for (const HostSlots& h : in.hosts) hl += (hl.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  p.argv.insert(p.argv.end(), {"-np", std::to_string(in.np), "-H", hl, "-bind-to", "none", "-map-by", "slot",
                               "--tag-output", "-x", "BARESGD_COMM=mpi", "-x", "OPENBLAS_NUM_THREADS", "-x",
                               "BARESGD_JOB_ID", "-x", "BARESGD_SECRET"});
  for (const std::string& e : p.env) {
    // Open MPI's settings, HOROVOD_* (HOROVOD_TIMELINE) and the user's other BARESGD_* (e.g.
    // BARESGD_TIMING) reach every rank, remote ones too.
    if (e.compare(0, 9, "OMPI_MCA_") != 0 && e.compare(0, 8, "HOROVOD_") != 0 &&
        (e.compare(0, 8, "BARESGD_") != 0 || is_launch_rank_env(e.substr(0, e.find('=')))))
      continue;
    p.argv.push_back("-x");
    p.argv.push_back(e.substr(0, e.find('=')));
  }
  std::string rsh = ssh_user_args(in.ssh);
  if (!rsh.empty()) p.argv.insert(p.argv.end(), {"-mca", "plm_rsh_args", rsh});
  p.argv.insert(p.argv.end(), in.command.begin(), in.command.end());
  return p;
}
