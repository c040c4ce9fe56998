// timeline_buckets: --overlap on's bucket exchanges on the timeline. Each bucket of the overlapped
// averaging gets its own thread track, "comm bucket <b>: <layers>", next to the comm track, so
// the exchange of the first layers' gradient shows in flight while backward of the last layers
// still runs on compute track 0 (one track per bucket: Chrome trace slices on one track must nest,
// and the buckets' exchanges overlap each other).
#pragma once
#include <string>
#include <vector>

// "comm bucket 0: fc2+fc1": the name of bucket `bucket`'s track.
std::string bucket_track_name(int bucket, const std::string& layers);

namespace timeline_detail {
// From timeline_start: the observer that timeline_overlap_observer() returns from now on records
// each bucket's exchange on its track (no observer when bucket_layers is empty).
void start_bucket_observer(const std::vector<std::string>& bucket_layers);
}  // namespace timeline_detail
