// job_report: the rank table (--verbose prints it on stderr) and the whole --dry-run report, made
// from the job plan (job_plan.h). The report's format is described in ./launch --help.
#pragma once
#include <string>
#include <vector>

#include "launcher/job_plan.h"

// "rank  host   local  cross  via    address" and one aligned row per rank.
std::vector<std::string> rank_table(const JobPlan& plan);

// The placeholders a dry run shows for what is chosen only when the job starts.
JobIdentity dry_run_identity();
std::string dry_run_store_addr(const JobPlan& plan);

// The --dry-run report (several lines, each ending in '\n'). Throws std::runtime_error when the
// run could not start either (ssh or mpirun not in PATH).
std::string dry_run_report(const JobPlan& plan);
