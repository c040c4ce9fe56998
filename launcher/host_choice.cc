// host_choice: -H, --hostfile, a Slurm allocation or localhost (see host_choice.h).
#include "launcher/host_choice.h"

namespace {

HostChoice from_slurm(const LaunchOptions& o, const EnvMap& env) {
  HostChoice c;
  c.source = HostSource::kSlurm;
  try {
    c.slurm = read_slurm_allocation(env);
  } catch (const SlurmListError& e) {
    throw HostError(std::string("in a Slurm allocation: ") + e.what());
  }
  c.hosts = c.slurm.hosts;
  c.np = o.np_given ? o.np : c.slurm.ntasks;
  if (c.np > c.slurm.slots)
    throw HostError("-np " + std::to_string(c.np) + " but the Slurm allocation " + c.slurm.job_id + " holds " +
                    std::to_string(c.slurm.slots) + (c.slurm.slots == 1 ? " task (" : " tasks (") + c.slurm.summary() +
                    ")");
  return c;
}

}  // namespace

std::string HostChoice::described() const {
  return source == HostSource::kSlurm ? "the Slurm allocation " + slurm.job_id + " (" + slurm.summary() + ")" : "";
}

HostChoice choose_hosts(const LaunchOptions& o, const EnvMap& env) {
  const bool flags = !o.hosts.empty() || !o.hostfile.empty();
  if (!flags && in_slurm_allocation(env)) return from_slurm(o, env);
  if (!o.np_given) throw HostError("-np N is required (the number of ranks)");
  HostChoice c;
  c.np = o.np;
  if (!o.hostfile.empty()) {
    c.source = HostSource::kHostfile;
  } else if (!o.hosts.empty()) {
    c.source = HostSource::kHostsFlag;
    c.hosts = parse_host_list(o.hosts);
  } else {
    c.hosts = {{"localhost", o.np}};
  }
  return c;
}
