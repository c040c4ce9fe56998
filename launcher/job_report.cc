// job_report: the rank table and the --dry-run report (see job_report.h).
#include "launcher/job_report.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "launcher/env.h"
#include "launcher/restart.h"

namespace {

using Row = std::vector<std::string>;
using Vars = std::map<std::string, std::string>;  // name -> value

// Cells padded to their column's width + 2; the last cell of a row is not padded.
std::vector<std::string> align(const std::vector<Row>& rows) {
  std::vector<size_t> width;
  for (const Row& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::vector<std::string> out;
  for (const Row& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c)
      line += c + 1 == r.size() ? r[c] : r[c] + std::string(width[c] + 2 - r[c].size(), ' ');
    out.push_back(line);
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// The variables a report shows: the BARESGD_*, OMPI_*, HOROVOD_* ones and OPENBLAS_NUM_THREADS.
bool shown_variable(const std::string& name) {
  for (const char* prefix : {"BARESGD_", "OMPI_", "HOROVOD_"})
    if (name.compare(0, std::strlen(prefix), prefix) == 0) return true;
  return name == "OPENBLAS_NUM_THREADS";
}

Vars shown_variables(const std::vector<std::string>& env) {
  Vars out;
  for (const std::string& e : env) {
    size_t eq = e.find('=');
    std::string name = e.substr(0, eq);
    if (eq == std::string::npos || !shown_variable(name)) continue;
    out[name] = name == "BARESGD_SECRET" ? "******" : e.substr(eq + 1);
  }
  return out;
}

// ./launch's own per-rank variables in the order it sets them, then the others by name.
std::vector<std::string> report_order(const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : launch_rank_env_names())
    if (names.count(n)) out.push_back(n);
  for (const std::string& n : names)
    if (!is_launch_rank_env(n)) out.push_back(n);
  return out;
}

// "environment of every rank" (the variables all ranks get with the same value), then a table of
// the others, one row per rank.
std::string environment_sections(const std::vector<Vars>& per_rank, const std::string& every_rank_note) {
  std::set<std::string> names, varying;
  for (const Vars& v : per_rank)
    for (const auto& kv : v) names.insert(kv.first);
  for (const std::string& n : names)
    for (const Vars& v : per_rank)
      if (!v.count(n) || v.at(n) != per_rank[0].at(n)) varying.insert(n);
  std::string out = "environment of every rank (" + every_rank_note + "the secret masked):\n";
  for (const std::string& n : report_order(names))
    if (!varying.count(n)) out += "  " + n + "=" + per_rank[0].at(n) + "\n";
  if (varying.empty()) return out;
  std::vector<std::string> columns = report_order(varying);
  std::vector<Row> rows = {Row{"rank"}};
  rows[0].insert(rows[0].end(), columns.begin(), columns.end());
  for (size_t r = 0; r < per_rank.size(); ++r) {
    Row row = {std::to_string(r)};
    for (const std::string& n : columns) row.push_back(per_rank[r].count(n) ? per_rank[r].at(n) : "(unset)");
    rows.push_back(row);
  }
  return out + "\nenvironment per rank:\n" + joined(align(rows));
}

// An agent rank's OPENBLAS_NUM_THREADS is set by its agent from that host's cores.
Vars rank_variables(const RankStart& r) {
  Vars v = shown_variables(r.env());
  if (r.request.openblas_local_size > 0)
    v["OPENBLAS_NUM_THREADS"] = "<cores>/" + std::to_string(r.request.openblas_local_size);
  return v;
}

std::vector<std::string> host_command(const RankStart& r) {
  if (!r.local()) return {display_command(r.spec.argv), "then the agent runs: " + display_command(r.request.argv)};
  std::string cmd = display_command(r.request.argv);
  if (r.program != r.request.argv[0]) cmd += "   (program " + r.program + ")";
  return {cmd};
}

// One row per host (its first rank's command; every rank there runs the same).
std::string command_section(const std::vector<RankStart>& ranks) {
  std::vector<Row> rows;
  std::set<int> seen;
  for (const RankStart& r : ranks) {
    if (!seen.insert(r.place->host_index).second) continue;
    std::vector<std::string> cmd = host_command(r);
    rows.push_back({r.host->name, cmd[0]});
    for (size_t k = 1; k < cmd.size(); ++k) rows.push_back({"", cmd[k]});
  }
  return "command per host (one process per rank):\n" + joined(align(rows));
}

std::string gloo_sections(const JobPlan& plan) {
  std::vector<RankStart> ranks;
  for (const RankPlacement& p : plan.layout)
    ranks.push_back(plan_gloo_rank(plan, p, dry_run_store_addr(plan), dry_run_identity()));
  std::vector<Vars> vars;
  for (const RankStart& r : ranks) vars.push_back(rank_variables(r));
  return environment_sections(vars, "") + "\n" + command_section(ranks);
}

std::string mpi_sections(const JobPlan& plan) {
  find_mpirun();
  MpirunPlan mp = build_mpirun_plan(plan_mpirun(plan, dry_run_identity()));
  std::vector<Vars> vars(plan.layout.size(), shown_variables(mp.env));
  return environment_sections(vars,
                              "mpirun passes each with -x; Open MPI adds OMPI_COMM_WORLD_RANK and the "
                              "other per-rank variables; ") +
         "\ncommand:\n" + display_command(mp.argv) + "\n";
}

std::string plural(size_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::vector<std::string> rank_table(const JobPlan& plan) {
  std::vector<Row> rows = {{"rank", "host", "local", "cross", "via", "address"}};
  for (const RankPlacement& p : plan.layout) {
    const HostInfo& h = plan.hosts[p.host_index];
    rows.push_back({std::to_string(p.rank), h.name, std::to_string(p.local_rank) + "/" + std::to_string(p.local_size),
                    std::to_string(p.cross_rank) + "/" + std::to_string(p.cross_size),
                    plan.srun_steps ? "srun"
                    : h.local       ? "local"
                                    : "ssh",
                    h.addr});
  }
  return align(rows);
}

JobIdentity dry_run_identity() { return {"******", "<job id>", "<nonce>"}; }

std::string dry_run_store_addr(const JobPlan& plan) { return plan.bind_addr + ":<port>"; }

std::string dry_run_report(const JobPlan& plan) {
  bool mpi = plan.opts.transport == Transport::kMpi;
  std::string out = "dry run: " + plural(plan.layout.size(), "rank") + " on " + plural(plan.hosts.size(), "host") +
                    " with " + (mpi ? "--mpi" : "--gloo") + "; nothing was started\n";
  if (!plan.host_source.empty()) out += "hosts and slots from " + plan.host_source + "\n";
  out += "\n";
  out += joined(rank_table(plan)) + "\n";
  out += mpi ? mpi_sections(plan) : gloo_sections(plan);
  std::string policy = restart_policy_line(plan.opts.max_restarts, plan.opts.command);
  return policy.empty() ? out : out + "\n" + policy;
}
