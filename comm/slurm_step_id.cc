// slurm_step_id: classifying SLURM_STEP_ID's value (see slurm_step_id.h).
#include "comm/slurm_step_id.h"

#include <climits>

#include "src/parse_int.h"

SlurmStepKind slurm_step_kind(const char* step_id) {
  if (!step_id) return SlurmStepKind::kNone;
  const std::string v = step_id;
  if (v == "batch" || v == "extern" || v == "interactive") return SlurmStepKind::kOther;
  const bool negative = !v.empty() && v[0] == '-';
  const std::string digits = negative ? v.substr(1) : v;
  long long id = 0;
  if (digits.size() > 10 || parse_decimal(digits, IntSign::kNone, 0, LLONG_MAX, &id) != IntText::kOk)
    return SlurmStepKind::kMalformed;
  return negative || id >= 0xfffffff0LL ? SlurmStepKind::kOther : SlurmStepKind::kSrunTask;
}
