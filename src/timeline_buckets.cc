// timeline_buckets: the overlapped averaging's observer (comm/overlap_observer.h) that turns each
// bucket's exchange into one record on its bucket track (see src/timeline_buckets.h).
#include "src/timeline_buckets.h"

#include "src/timeline_record.h"

namespace {

// Records each bucket's exchange of the recorded steps; lives until the process ends (a record
// points at its layers' name).
class BucketObserver : public OverlapObserver {
 public:
  explicit BucketObserver(const std::vector<std::string>& layers) : layers_(layers) {}
  void on_bucket(const BucketExchange& e) override {
    if (!timeline_detail::recording.load(std::memory_order_relaxed)) return;
    TimelineRecord r;
    r.kind = TimelineKind::kBucketExchange;
    r.track = bucket_track(e.bucket);
    r.step = timeline_detail::current_step();
    r.call = e.bucket;
    r.phase = size_t(e.bucket) < layers_.size() ? layers_[size_t(e.bucket)].c_str() : "?";
    r.bytes = e.bytes;
    r.begin_ns = e.send_begin_ns;
    r.send_end_ns = e.send_end_ns;
    r.wait_begin_ns = e.wait_begin_ns;
    r.end_ns = e.wait_end_ns;
    timeline_detail::push(r);
  }

 private:
  const std::vector<std::string> layers_;
};

BucketObserver* g_bucket_observer = nullptr;  // never freed: records point into it

}  // namespace

std::string bucket_track_name(int bucket, const std::string& layers) {
  return "comm bucket " + std::to_string(bucket) + ": " + layers;
}

namespace timeline_detail {
void start_bucket_observer(const std::vector<std::string>& bucket_layers) {
  if (!bucket_layers.empty() && !g_bucket_observer) g_bucket_observer = new BucketObserver(bucket_layers);
}
}  // namespace timeline_detail

OverlapObserver* timeline_overlap_observer() { return g_bucket_observer; }
