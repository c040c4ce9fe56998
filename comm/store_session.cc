// store_session: see store_session.h.
#include "comm/store_session.h"

#include <algorithm>
#include <cstring>

namespace {
// Buffers that grew for one large frame are released once empty, so an idle connection that once
// carried 64 MiB does not keep holding it.
constexpr size_t kKeepCapacity = size_t(1) << 20;

void release_if_large(std::string* s) {
  if (s->capacity() > kKeepCapacity) std::string().swap(*s);
}
}  // namespace

const std::string* StoreTable::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

bool StoreTable::set(const std::string& key, const std::string& value) {
  auto it = kv_.find(key);
  const uint64_t old_cost = it == kv_.end() ? 0 : cost(key.size(), it->second.size());
  const uint64_t new_bytes = bytes_ - old_cost + cost(key.size(), value.size());
  if (new_bytes > max_bytes_) return false;
  const bool added = it == kv_.end();
  if (added) {
    kv_.emplace(key, value);
  } else {
    it->second = value;
  }
  bytes_ = new_bytes;
  key_changed(key, added);
  return true;
}

void StoreTable::key_changed(const std::string& key, bool added) {
  for (auto& [prefix, state] : prefixes_) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    if (added) ++state.count;
    state.reply_valid = false;
    std::string().swap(state.reply);
  }
}

size_t StoreTable::count_prefix(const std::string& prefix) {
  auto known = prefixes_.find(prefix);
  if (known != prefixes_.end()) return known->second.count;
  size_t n = 0;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    ++n;
  if (prefixes_.size() < kMaxCountedPrefixes) prefixes_[prefix].count = n;
  return n;
}

const std::string& StoreTable::gather_reply(const std::string& prefix) {
  count_prefix(prefix);  // registers the prefix when there is room
  auto known = prefixes_.find(prefix);
  std::string* out = known != prefixes_.end() ? &known->second.reply : &uncached_reply_;
  if (known != prefixes_.end() && known->second.reply_valid) return *out;
  GatheredKeys entries;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    entries.emplace_back(it->first, it->second);
  *out = encode_gather_found(entries);
  if (known != prefixes_.end()) known->second.reply_valid = true;
  return *out;
}

StoreTable::AddResult StoreTable::add(const std::string& key, int64_t delta, int64_t* result) {
  int64_t current = 0;
  if (const std::string* v = find(key)) {
    if (!parse_decimal_i64(*v, &current)) return AddResult::kNotInteger;
  }
  int64_t sum;
  if (__builtin_add_overflow(current, delta, &sum)) return AddResult::kOverflow;
  if (!set(key, std::to_string(sum))) return AddResult::kFull;
  *result = sum;
  return AddResult::kOk;
}

StoreSession::StoreSession(StoreTable* table, const std::string& secret, const std::string& nonce,
                           const StoreLimits& limits)
    : table_(table), limits_(limits), expected_mac_(hmac_sha256(secret, nonce)) {
  reply(std::string(kStoreGreeting) + nonce);
}

void StoreSession::on_input(const char* data, size_t n) {
  if (state_ != State::kAuthenticating && state_ != State::kReady) return;
  if (peer_eof_) return;
  in_.append(data, n);
  process();
}

void StoreSession::on_input_closed() {
  peer_eof_ = true;
  process();
}

void StoreSession::on_output_written(size_t n) {
  out_pos_ += std::min(n, output_size());
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
    release_if_large(&out_);
  }
  process();  // parsing may have paused for backpressure
}

bool StoreSession::wants_input() const {
  return (state_ == State::kAuthenticating || state_ == State::kReady) && !peer_eof_ &&
         output_size() < limits_.max_pending_output;
}

bool StoreSession::done() const {
  return state_ == State::kClosed || (state_ == State::kClosing && output_size() == 0);
}

void StoreSession::process() {
  bool paused = false;
  while (state_ == State::kAuthenticating || state_ == State::kReady) {
    if (output_size() >= limits_.max_pending_output) {
      paused = true;
      break;
    }
    const size_t avail = in_.size() - in_pos_;
    if (avail < 4) break;
    const uint32_t len = get_u32be(in_.data() + in_pos_);
    if (state_ == State::kAuthenticating ? len != kStoreMacBytes : len > limits_.max_frame_bytes) {
      close_now(CloseReason::kMalformed);
      return;
    }
    if (avail - 4 < len) break;
    const char* body = in_.data() + in_pos_ + 4;
    in_pos_ += 4 + size_t(len);
    if (state_ == State::kAuthenticating) {
      handle_auth(body, len);
    } else {
      handle_request(body, len);
    }
  }
  if (state_ == State::kClosed) return;
  // Drop the consumed prefix (cheap: at most one partial frame remains behind it).
  if (in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
    release_if_large(&in_);
  } else if (in_pos_ > 0) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  if (peer_eof_ && !paused && (state_ == State::kAuthenticating || state_ == State::kReady)) {
    // Nothing more will arrive; a partial frame left in in_ can never complete.
    close_after_flush(CloseReason::kPeerClosed);
  }
}

void StoreSession::handle_auth(const char* body, size_t n) {
  if (constant_time_equal(std::string(body, n), expected_mac_)) {
    state_ = State::kReady;
    reply("OK");
  } else {
    reply("DENIED");
    close_after_flush(CloseReason::kDenied);
  }
}

std::string store_reply(StoreTable* table, const StoreRequest& req, size_t max_reply_bytes) {
  switch (req.op) {
    case 'S':
      return table->set(req.key, req.value) ? std::string("OK") : std::string(kStoreErrorPrefix) + "store full";
    case 'G': {
      const std::string* v = table->find(req.key);
      if (v == nullptr) return "N";
      std::string out;
      out.reserve(1 + v->size());
      out.push_back('F');
      out += *v;
      return out;
    }
    case 'P': {
      // Every key under the prefix once `want` of them exist, else how many do (store_protocol.h).
      const size_t have = table->count_prefix(req.key);
      if (have < req.want) {
        std::string out = "N";
        put_u32be(&out, static_cast<uint32_t>(have));
        return out;
      }
      const std::string& found = table->gather_reply(req.key);
      if (found.size() > max_reply_bytes)
        return std::string(kStoreErrorPrefix) + "gather reply of " + std::to_string(found.size()) +
               " bytes is over the frame limit of " + std::to_string(max_reply_bytes);
      return found;
    }
    default: {  // 'A' (parse_store_request admits no other op)
      int64_t result = 0;
      switch (table->add(req.key, req.delta, &result)) {
        case StoreTable::AddResult::kOk: {
          std::string out;
          put_i64be(&out, result);
          return out;
        }
        case StoreTable::AddResult::kNotInteger:
          return std::string(kStoreErrorPrefix) + "value is not a decimal integer";
        case StoreTable::AddResult::kOverflow:
          return std::string(kStoreErrorPrefix) + "counter would overflow int64";
        case StoreTable::AddResult::kFull:
          return std::string(kStoreErrorPrefix) + "store full";
      }
      return std::string(kStoreErrorPrefix) + "unknown add result";
    }
  }
}

void StoreSession::handle_request(const char* body, size_t n) {
  if (!parse_store_request(body, n, &req_)) {
    close_now(CloseReason::kMalformed);
    return;
  }
  // A reply is at most a frame's limit (a get's value is, by the set that stored it; a gather's
  // many values are checked).
  reply(store_reply(table_, req_, 1 + limits_.max_frame_bytes));
  // Values can be large; do not keep the last one alive in the reused request.
  if (req_.value.capacity() > kKeepCapacity) std::string().swap(req_.value);
}

void StoreSession::reply(const std::string& body) {
  put_u32be(&out_, static_cast<uint32_t>(body.size()));
  out_ += body;
}

void StoreSession::close_now(CloseReason reason) {
  state_ = State::kClosed;
  reason_ = reason;
  std::string().swap(in_);
  std::string().swap(out_);
  in_pos_ = out_pos_ = 0;
}

void StoreSession::close_after_flush(CloseReason reason) {
  state_ = State::kClosing;
  reason_ = reason;
  std::string().swap(in_);
  in_pos_ = 0;
}
