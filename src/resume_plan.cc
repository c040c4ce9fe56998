// resume_plan: --resume's choice of checkpoint and the one-line notes of it (see resume_plan.h).
#include "src/resume_plan.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

namespace {

// printf's format into a string (one note line, without its newline).
__attribute__((format(printf, 1, 2))) std::string text_of(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  std::string text(size_t(n > 0 ? n : 0) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), format, again);
  va_end(again);
  va_end(args);
  text.pop_back();
  return text;
}

std::string numbers_text(const std::vector<SettingChange>& changes, bool was) {
  return changes_text(changes, was, {SettingChange::kNumbers});
}

// The refusal of a checkpoint of another configuration, naming the file and each difference.
std::string refusal_of(const std::string& path, const std::vector<SettingChange>& changes) {
  return "checkpoint " + path + " was written with " + numbers_text(changes, true) + ", this run has " +
         numbers_text(changes, false) +
         " (resume needs the same configuration; --resume-any-config continues it anyway)";
}

// The refusal of a checkpoint holding every rank's own --use-adasum momentum on another world size
// (empty: it fits).
std::string momentum_refusal(const TrainState& st, const std::string& path, const RunConfig& now) {
  if (st.world_size == now.world_size || st.momentum_buffers <= 1) return "";
  return "checkpoint " + path + " holds each of its " + std::to_string(st.world_size) +
         " ranks' own --use-adasum momentum; it cannot continue on " + std::to_string(now.world_size) +
         (now.world_size == 1 ? " rank" : " ranks") + " (Adasum keeps one momentum buffer per rank)";
}

// Where it continues, the harmless differences, and for a checkpoint before version 4 (no run
// id, no settings) what could not be compared.
void note_resume(const TrainState& st, const std::string& path, const std::vector<SettingChange>& changes,
                 const std::string& run_id, std::vector<std::string>* notes) {
  notes->push_back(text_of("train: resuming from %s (epoch %d, batch %lld, step %lld), run %s", path.c_str(), st.epoch,
                           (long long)st.batch, (long long)st.step, st.run_id.empty() ? "unknown" : st.run_id.c_str()));
  const std::string harmless = changes_text(changes, true, {SettingChange::kHarmless});
  if (!harmless.empty())
    notes->push_back(text_of("train: it was written with %s, this run has %s (the steps compute the same numbers%s)",
                             harmless.c_str(), changes_text(changes, false, {SettingChange::kHarmless}).c_str(),
                             harmless.find("--threads") != std::string::npos ? ", up to float rounding" : ""));
  if (st.run_id.empty())
    notes->push_back(
        text_of("train: %s is a version %d checkpoint: it records no run id and no --lr, --momentum, "
                "dropout or averaging options (only world size, --batch-size and --seed were compared); "
                "this run continues as run %s",
                path.c_str(), st.version, run_id.c_str()));
}

// A checkpoint of another world size (an elastic restart): its epoch continues at the first sample
// it had not trained, dealt over this world (DistributedSampler::set_epoch's first_sample), from
// batch 0; said with the learning rate the example scales by the world size.
void continue_at_sample(const Options& opts, const RunConfig& now, TrainState* st, std::vector<std::string>* notes) {
  const int64_t sample = st->epoch_first_sample + st->batch * int64_t(st->batch_size) * st->world_size;
  const double lr = opts.use_adasum ? opts.lr : opts.lr * now.world_size;
  notes->push_back(
      text_of("train: continuing epoch %d at sample %lld on %d ranks (the checkpoint was written by %d): "
              "the epoch's remaining samples are dealt over this world; lr %g (%s)",
              st->epoch, (long long)sample, now.world_size, st->world_size, lr,
              opts.use_adasum ? "--use-adasum: not scaled" : ("--lr x " + std::to_string(now.world_size)).c_str()));
  st->epoch_first_sample = sample;
  st->batch = 0;
  st->world_size = now.world_size;
}

// --resume-any-config continuing a checkpoint of another configuration as a new run: a batch of
// another --batch-size moves to this size's batch (batch_for_new_size).
void continue_other_config(const std::string& path, const std::vector<SettingChange>& changes, const RunConfig& now,
                           const std::string& run_id, TrainState* st, std::vector<std::string>* notes) {
  std::string moved;
  if (st->batch_size != now.batch_size && st->batch > 0) {
    const int64_t b = batch_for_new_size(*st, now.batch_size);
    moved = "; batch " + std::to_string(st->batch) + " of --batch-size " + std::to_string(st->batch_size) +
            " continues at batch " + std::to_string(b) + " of --batch-size " + std::to_string(now.batch_size);
    st->batch = b;
  }
  notes->push_back(text_of("train: --resume-any-config: continuing %s with %s instead of %s as new run %s%s",
                           path.c_str(), numbers_text(changes, false).c_str(), numbers_text(changes, true).c_str(),
                           run_id.c_str(), moved.c_str()));
}

}  // namespace

RunConfig run_config_now(const Options& opts, int world, int threads) {
  RunConfig c;
  c.world_size = world;
  c.batch_size = opts.batch_size;
  c.seed = opts.seed;
  RunSettings& s = c.settings;
  s.lr = opts.lr;
  s.momentum = opts.momentum;
  s.epochs = opts.epochs;
  s.dropout = !opts.no_dropout;
  s.fp16_allreduce = opts.fp16_allreduce;
  s.predivide = opts.gradient_predivide_factor;
  s.adasum = opts.use_adasum;
  s.allreduce = opts.allreduce;
  s.threads = threads;
  return c;
}

int64_t batch_for_new_size(const TrainState& st, int batch_size) {
  const int64_t done = st.batch * int64_t(st.batch_size);
  return (done + batch_size - 1) / batch_size;
}

ResumePlan plan_resume(const Options& opts, const RunConfig& now, ResumeCandidates found,
                       const std::vector<std::string>& warnings, const std::string& new_run_id) {
  ResumePlan plan;
  for (const auto& w : warnings) plan.notes.push_back("train: warning: " + w);
  if (!found.have_match && !found.have_other && !warnings.empty() && !opts.resume_fresh) {
    // Checkpoints are there but none can be read: starting over would silently lose the run.
    plan.refusal = "train: --resume: none of the " + std::to_string(warnings.size()) + " checkpoint file(s) in " +
                   opts.checkpoint_dir + " is usable (see the warnings above); pass --resume-fresh to start " +
                   "from the beginning anyway";
    return plan;
  }
  if (!found.have_match && !found.have_other) {
    plan.notes.push_back("train: no " + std::string(warnings.empty() ? "" : "usable ") + "checkpoint in " +
                         opts.checkpoint_dir + "; starting from the beginning");
    return plan;
  }
  if (found.have_match && found.have_other) {
    const auto changes = run_config_changes(run_config_of(found.other), found.other.has_settings, now);
    plan.notes.push_back("train: not resuming from the newer " + found.other_path + ": it was written with " +
                         numbers_text(changes, true) + ", this run has " + numbers_text(changes, false));
  }
  const bool other = !found.have_match;
  plan.state = std::move(other ? found.other : found.match);
  plan.path = other ? found.other_path : found.match_path;
  TrainState& st = plan.state;
  const auto changes = run_config_changes(run_config_of(st), st.has_settings, now);
  if (other && !opts.resume_any_config) plan.refusal = refusal_of(plan.path, changes);
  if (plan.refusal.empty()) plan.refusal = momentum_refusal(st, plan.path, now);
  if (!plan.refusal.empty()) return plan;
  // A changed configuration is a new run (its files never prune the run it came from).
  plan.run_id = other || st.run_id.empty() ? new_run_id : st.run_id;
  note_resume(st, plan.path, changes, plan.run_id, &plan.notes);
  if (st.world_size != now.world_size) continue_at_sample(opts, now, &st, &plan.notes);
  if (other) continue_other_config(plan.path, changes, now, plan.run_id, &st, &plan.notes);
  plan.resumed = true;
  return plan;
}
