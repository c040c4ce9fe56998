// checkpoint_names: formats and recognises checkpoint file names.
#include "src/checkpoint_names.h"

#include <climits>
#include <cstdio>

#include "src/parse_int.h"
#include "src/run_config.h"

std::string checkpoint_file_name(const std::string& run_id, long long step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%s-%012lld.bin", run_id.c_str(), step);
  return name;
}

bool parse_checkpoint_name(const std::string& name, std::string* run_id, long long* step) {
  if (name.size() < 10 || name.compare(0, 5, "ckpt-") != 0 || name.compare(name.size() - 4, 4, ".bin") != 0)
    return false;
  std::string middle = name.substr(5, name.size() - 9);
  std::string run;
  if (middle.size() > 17 && middle[16] == '-' && is_run_id(middle.substr(0, 16))) {
    run = middle.substr(0, 16);
    middle = middle.substr(17);
  }
  long long x = 0;
  if (middle.size() > 18 || parse_decimal(middle, IntSign::kNone, 0, LLONG_MAX, &x) != IntText::kOk)
    return false;  // not one of ours (we write 12 digits)
  *run_id = run;
  *step = x;
  return true;
}

bool is_checkpoint_temp_name(const std::string& name) {
  std::string run;
  long long step;
  return name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
         parse_checkpoint_name(name.substr(1, name.size() - 5), &run, &step);
}
