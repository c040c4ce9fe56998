// backend_gloo: the Communicator over Gloo's TCP transport (with comm/gloo_sync_lane, the only files
// that include Gloo).
//
// Start-up, bounded by CommOptions::start_timeout:
//   1. Open the rendezvous store: files on --rendezvous-dir (comm/rendezvous_files), or the launcher's store
//      (StoreClient to BARESGD_STORE_ADDR, authenticated with BARESGD_SECRET), or under torchrun
//      the c10d TCPStore at MASTER_ADDR:MASTER_PORT (comm/c10d_store_client), which its agent
//      serves, or rank 0 when the agent's store is off (comm/c10d_store_server), or
//      under plain srun the store rank 0 serves, admitted by MUNGE (comm/slurm_store).
//   2. Bind a tcp device to BARESGD_HOST_ADDR (or --network-interface: a name or an address, else
//      GLOO_SOCKET_IFNAME; under plain srun on several nodes this node's Slurm NodeAddr;
//      127.0.0.1 when every rank is on one host and nothing was given). A loopback address
//      (other than one the user wrote) is spread over the host's ranks: local rank r binds
//      base + 256 r, 127.0.0.1, 127.0.1.1, ... (comm/loopback_spread.h), so 256 ranks on one host
//      do not hold every port of one address.
//   3. Open the gate (comm/pair_gate): ONE listening socket on that address, port 0.
//   4. Hello: every rank claims its rank (O_EXCL marker file, or an atomic add on the launcher's
//      store), sets "<job>/baresgd/hello/<rank>" = its size, host, gate address and bound address,
//      then polls until every other rank's hello exists. A rank that never appears is named in the
//      timeout error ("rank 1 never registered"), and a rank with a different world size or a
//      duplicate rank number is reported before any socket is opened. The job secret the gate
//      proves is the launcher's BARESGD_SECRET; without a launcher rank 0 draws one and sets it as
//      "<job>/baresgd/gate-secret" before its hello (docs/comm.md says what that protects where).
//   5. Phase A (comm/pair_gate): for each pair and each of the two meshes, the higher rank connects
//      to the lower rank's gate and both prove the job secret over fresh nonces; a stranger's
//      connection is dropped and reported on one line, never taken as a peer. One deadline (what
//      is left of CommOptions::start_timeout) for all of it, and its error names every rank whose
//      connection never completed.
//      Phase B (comm/gloo_mesh, comm/gloo_handover): each authenticated socket becomes a Gloo
//      pair's socket, pair by pair, with no store and no waiting on another rank: the main mesh,
//      then the sync lane's (comm/gloo_sync_lane.h).
//   6. On --rendezvous-dir: a barrier, then each rank removes the rendezvous files it wrote; under
//      srun, and under torchrun without its agent's store, a barrier, then every rank closes its
//      connection and rank 0 stops its store; on the launcher's store each rank closes its
//      connection (no barrier: the store keeps its keys for the others), so a job holds the
//      store's connections only during start-up.
// Collectives use Gloo's option-style algorithms with CommOptions::comm_timeout on every wait:
//   allreduce = direct exchange while (n-1) * bytes <= 1 MiB (every rank sends its vector to all
//     others in one round and sums in rank order: one latency instead of the ring's chain of
//     wake-ups; docs/comm.md has how it compares with the ring), else Gloo's ring
//     (reduce-scatter + allgather, 2(n-1) dependent steps, ~2(n-1)/n of the bytes per rank);
//     the gradient's size runs on the sync lane, moved by the rank's own thread (else its receives
//     are posted a round ahead: see direct_allreduce),
//   broadcast = binomial tree from the root (ceil(log2 n) steps, whole buffer per step),
//   allgather = ring (n-1 steps), barrier = Gloo's barrier, sendrecv = one unbound send + recv,
//   exchange = an unbound send to one peer and a receive from another (the steps of comm/allreduce_*.cc),
//   library_allreduce_sum = gloo::allreduce at every size (--allreduce gloo),
//   open_gather_channel = the overlapped averaging's buckets: regions of the sync lane
//     (LaneGatherChannel), else unbound sends to every peer, their receives posted a round ahead in
//     two alternating buffers (see GlooGatherChannel).
// Gloo's device thread runs in SCHED_IDLE (see demote_device_threads).
// Every Gloo exception becomes a one-line std::runtime_error naming this rank, the operation and
// the peer(s) involved; after one failure the communicator refuses further collectives (Gloo's
// pairs are in an unknown state after an I/O error).
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/c10d_store_client.h"
#include "comm/c10d_store_server.h"
#include "comm/comm_internal.h"
#include "comm/gloo_mesh.h"
#include "comm/loopback_spread.h"
#include "comm/gloo_sync_lane.h"
#include "comm/half_float.h"
#include "comm/pair_gate.h"
#include "comm/rendezvous_files.h"
#include "comm/slurm_store.h"
#include "comm/socket_io.h"
#include "comm/store_client.h"
#include "comm/store_protocol.h"

namespace {

using ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr uint8_t kSendRecvSlotPrefix = 0x40;  // beyond Gloo's own collective prefixes (0x01..0x08)
constexpr uint8_t kDirectAllreduceSlotPrefix = 0x41;
constexpr uint8_t kChannelSlotPrefix = 0x42;
constexpr uint8_t kExchangeSlotPrefix = 0x43;
constexpr uint8_t kGatherChannelSlotPrefix = 0x44;  // tag: round << 8 | channel
constexpr int kMaxGatherChannels = 256;
constexpr size_t kChannelMinBytes = 4096;  // smaller allreduces (test statistics) are not worth a channel
// Allreduce sends every rank's vector to every rank directly while that costs at most this many
// bytes per rank ((size-1) * buffer bytes); above it, Gloo's ring.
#ifndef BARESGD_GLOO_DIRECT_MAX_BYTES
#define BARESGD_GLOO_DIRECT_MAX_BYTES (size_t(1) << 20)
#endif
constexpr size_t kDirectAllreduceMaxBytes = BARESGD_GLOO_DIRECT_MAX_BYTES;

std::string seconds(ms t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", t.count() / 1000.0);
  return buf;
}

// One line, without Gloo's "[./gloo/transport/tcp/pair.cc:598] " source-location prefixes.
std::string short_gloo_message(const std::string& what) {
  std::string s = what;
  size_t from = 0;
  for (;;) {
    size_t open = s.find('[', from);
    if (open == std::string::npos) break;
    size_t close = s.find("] ", open);
    if (close == std::string::npos) break;
    const std::string inside = s.substr(open + 1, close - open - 1);
    if (inside.find(".cc:") != std::string::npos || inside.find(".h:") != std::string::npos) {
      s.erase(open, close + 2 - open);
      from = open;
    } else {
      from = open + 1;
    }
  }
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// ---- Rendezvous stores: Gloo's Store interface plus a non-blocking presence test. ----

class RendezvousStore : public gloo::rendezvous::Store {
 public:
  RendezvousStore(ms default_timeout, std::string where)
      : default_timeout_(default_timeout), where_(std::move(where)) {}
  virtual bool has(const std::string& key) = 0;
  // One request for every key under prefix once `want` of them exist (true; they are cached for
  // has() and get()), where the store has it (ours: comm/store_protocol.h's gather); false while
  // fewer exist, or when the store has no such request (then callers poll key by key).
  virtual bool gathers() const { return false; }
  virtual bool gather(const std::string& prefix, int want) { return false; }
  // Atomically claims `name` for this process: false if someone already did (a duplicate rank).
  virtual bool claim(const std::string& name) = 0;
  // True when every rank must leave the store after a barrier: what this rank wrote outlives the
  // job unless it removes it (files on a directory), or a rank serves it and must not stop early.
  virtual bool leave_after_barrier() const { return false; }
  // Called once every rank has connected (nobody reads the store again): drop what this rank wrote
  // (or, under srun, close the connection; rank 0 stops its store).
  virtual void forget_own_keys() {}
  // Called once this rank's meshes are connected, when leave_after_barrier() is false: it never
  // reads the store again, so it closes its connection (the store keeps what it wrote for the
  // others). A job of W ranks so holds the store's connections only during start-up.
  virtual void close_connection() {}
  const std::string& where() const { return where_; }

  void wait(const std::vector<std::string>& keys) override { wait(keys, default_timeout_); }
  void wait(const std::vector<std::string>& keys, const ms& timeout) override {
    const auto deadline = Clock::now() + timeout;
    std::set<std::string> missing(keys.begin(), keys.end());
    socket_io::Backoff pause(ms(1), ms(20));
    for (;;) {
      for (auto it = missing.begin(); it != missing.end();) it = has(*it) ? missing.erase(it) : std::next(it);
      if (missing.empty()) return;
      if (!pause.wait(deadline)) {
        std::string list;
        for (const auto& k : missing) list += (list.empty() ? "'" : ", '") + k + "'";
        throw gloo::IoException("timed out after " + seconds(timeout) + " waiting for key(s) " + list + " in " +
                                where_);
      }
    }
  }

 protected:
  ms default_timeout_;
  std::string where_;
};

class FileRendezvous : public RendezvousStore {
 public:
  FileRendezvous(const std::string& dir, ms timeout) : RendezvousStore(timeout, "rendezvous dir " + dir), files_(dir) {}
  void set(const std::string& key, const std::vector<char>& data) override { files_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    std::vector<char> value;
    if (!files_.get(key, &value)) throw gloo::IoException("key '" + key + "' vanished from " + where());
    return value;
  }
  bool has(const std::string& key) override { return files_.has(key); }
  bool claim(const std::string& name) override { return files_.claim(name); }
  bool leave_after_barrier() const override { return true; }
  void forget_own_keys() override { files_.remove_own_files(); }

 private:
  RendezvousFiles files_;
};

// A client of our store protocol: the launcher's store, or under srun rank 0's MUNGE store
// (comm/slurm_store.h), whose server rank 0 runs here until every rank has connected.
class ClientRendezvous : public RendezvousStore {
 public:
  ClientRendezvous(const std::string& addr, const std::string& secret, ms timeout)
      : RendezvousStore(timeout, "the launcher's store at " + addr),
        own_(new StoreClient(addr, secret, timeout)),
        client_(*own_) {}
  ClientRendezvous(SlurmStore slurm, ms timeout)
      : RendezvousStore(timeout, slurm.where),
        server_(std::move(slurm.server)),
        own_(std::move(slurm.client)),
        client_(*own_),
        served_by_a_rank_(true) {}
  // Rank 0's store dies with this job's start-up: every rank leaves it after a barrier.
  bool leave_after_barrier() const override { return served_by_a_rank_; }
  void forget_own_keys() override {
    own_.reset();
    if (server_) server_->stop();
  }
  void set(const std::string& key, const std::vector<char>& data) override {
    client_.set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    const std::string& v = cache_[key];
    return std::vector<char>(v.begin(), v.end());
  }
  bool has(const std::string& key) override {
    if (cache_.count(key)) return true;
    std::string v;
    if (!client_.try_get(key, &v)) return false;
    cache_[key] = std::move(v);
    return true;
  }
  bool claim(const std::string& name) override { return client_.add(name, 1) == 1; }
  void close_connection() override { own_.reset(); }  // client_ is never used after this
  bool gathers() const override { return true; }
  bool gather(const std::string& prefix, int want) override {
    GatheredKeys entries;
    uint32_t have = 0;
    if (!client_.try_gather(prefix, static_cast<uint32_t>(want), &entries, &have)) return false;
    for (auto& e : entries) cache_[e.first] = std::move(e.second);
    return true;
  }

 private:
  std::unique_ptr<MungeStoreServer> server_;  // declared first: destroyed after the client
  std::unique_ptr<StoreClient> own_;
  StoreClient& client_;
  bool served_by_a_rank_ = false;
  std::map<std::string, std::string> cache_;
};

// torchrun's c10d TCPStore (keys under "<job>/"). With torchrun's agent store on (static
// rendezvous) the agent serves it and every rank is a client, as long as the agent lives. With it
// off (--standalone, --rdzv_backend c10d) rank 0 serves it (comm/c10d_store_server) and connects
// to it like everyone else; then every rank leaves it after a barrier and rank 0 stops it.
class C10dRendezvous : public RendezvousStore {
 public:
  C10dRendezvous(const std::string& addr, ms timeout, std::unique_ptr<C10dStoreServer> server, bool hosted)
      : RendezvousStore(timeout, store_name(hosted) + " at " + addr),
        server_(std::move(server)),
        client_(new C10dStoreClient(addr, timeout, store_name(hosted))),
        hosted_(hosted) {}
  static std::string store_name(bool hosted) {
    return hosted ? "the c10d TCPStore rank 0 serves" : "torchrun's c10d TCPStore";
  }
  bool leave_after_barrier() const override { return hosted_; }
  void forget_own_keys() override {
    client_.reset();
    if (server_) server_->stop();
  }
  void set(const std::string& key, const std::vector<char>& data) override {
    client().set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    const std::string v = client().get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  bool has(const std::string& key) override { return client().check(key); }
  bool claim(const std::string& name) override { return client().add(name, 1) == 1; }

 private:
  C10dStoreClient& client() {
    if (!client_) throw gloo::IoException(where() + ": used after this rank left it");
    return *client_;
  }
  std::unique_ptr<C10dStoreServer> server_;  // declared first: destroyed after the client
  std::unique_ptr<C10dStoreClient> client_;
  bool hosted_;
};

// Splits "host:port" or "[v6]:port" (comm/torchrun_env's c10d_store_addr) into host and port.
void split_host_port(const std::string& addr, std::string* host, int* port) {
  const size_t colon = addr.rfind(':');
  *host = addr.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  *port = std::atoi(addr.c_str() + colon + 1);
}

// ---- Reductions (c = a + b element-wise); the f16 one sums in float and rounds to half. ----

void sum_f32(void* c, const void* a, const void* b, size_t n) {
  float* o = static_cast<float*>(c);
  const float *x = static_cast<const float*>(a), *y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}
void sum_f64(void* c, const void* a, const void* b, size_t n) {
  double* o = static_cast<double*>(c);
  const double *x = static_cast<const double*>(a), *y = static_cast<const double*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}
void sum_f16(void* c, const void* a, const void* b, size_t n) {
  half_bits* o = static_cast<half_bits*>(c);
  const half_bits *x = static_cast<const half_bits*>(a), *y = static_cast<const half_bits*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = float_to_half(half_to_float(x[i]) + half_to_float(y[i]));
}

bool is_ip_literal(const std::string& s) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// ---- The communicator. ----

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const RankInfo& info, const CommOptions& opts) : info_(info), opts_(opts) {
    info_.backend = "gloo";
    if (info_.size == 1) {  // nobody to talk to: no store, no sockets
      info_.cross_rank = 0;
      info_.cross_size = 1;
      return;
    }
    start_ = Clock::now();
    choose_iface();
    open_store();
    open_device();
    open_gate();
    hello();
    connect();
    leave_store();
    if (info_.cross_rank < 0) {
      std::vector<int> local(info_.size);
      allgather(local.data(), &info_.local_rank, sizeof(int));
      assign_cross_ranks(&info_, local);
    }
  }

  ~GlooCommunicator() override {
    chan_.buf.reset();  // its posted receives die with it (Gloo holds them through weak pointers)
    chan_.lane.reset();
    lane_.reset();
    context_.reset();
    device_.reset();
    store_.reset();
  }

  const RankInfo& info() const override { return info_; }
  const char* backend_name() const override { return "gloo"; }

  void allreduce_sum(float* data, size_t n) override { allreduce<float>(data, n, &sum_f32); }
  void allreduce_sum(double* data, size_t n) override { allreduce<double>(data, n, &sum_f64); }
  void allreduce_sum_f16(half_bits* data, size_t n) override {
    static_assert(sizeof(gloo::float16) == sizeof(half_bits), "gloo::float16 is 2 bytes");
    allreduce<gloo::float16>(reinterpret_cast<gloo::float16*>(data), n, &sum_f16);
  }

  void broadcast(void* data, size_t bytes, int root) override {
    check_peer(info_, root, "broadcast from root");
    if (bytes == 0 || info_.size == 1) return;
    guarded("broadcast", broadcast_peers(root), [&] {
      gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<uint8_t*>(data), bytes);
      o.setRoot(root);
      o.setTag(next_tag());
      o.setTimeout(opts_.comm_timeout);
      gloo::broadcast(o);
    });
  }

  void barrier() override {
    if (info_.size == 1) return;
    guarded("barrier", "the other ranks", [&] {
      gloo::BarrierOptions o(context_);
      o.setTag(next_tag());
      o.setTimeout(opts_.comm_timeout);
      gloo::barrier(o);
    });
  }

  void allgather(void* out, const void* in, size_t bytes) override {
    if (bytes == 0) return;
    if (info_.size == 1) {
      std::memmove(out, in, bytes);
      return;
    }
    std::vector<uint8_t> copy;
    if (ranges_overlap(in, bytes, out, bytes * info_.size)) {
      copy.assign(static_cast<const uint8_t*>(in), static_cast<const uint8_t*>(in) + bytes);
      in = copy.data();
    }
    const int n = info_.size, r = info_.rank;
    guarded("allgather", "ring neighbours " + pair_name((r + n - 1) % n, (r + 1) % n), [&] {
      gloo::AllgatherOptions o(context_);
      o.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
      o.setOutput(static_cast<uint8_t*>(out), bytes * info_.size);
      o.setTag(next_tag());
      o.setTimeout(opts_.comm_timeout);
      gloo::allgather(o);
    });
  }

  void sendrecv(const void* send, void* recv, size_t bytes, int peer) override {
    std::vector<uint8_t> copy;
    send = sendrecv_prologue(info_, send, recv, bytes, peer, &copy);
    if (!send) return;
    guarded("sendrecv", "rank " + std::to_string(peer), [&] {
      auto out = context_->createUnboundBuffer(const_cast<void*>(send), bytes);
      auto in = context_->createUnboundBuffer(recv, bytes);
      const uint64_t slot = gloo::Slot::build(kSendRecvSlotPrefix, 0);
      in->recv(peer, slot);
      out->send(peer, slot);
      if (!in->waitRecv(opts_.comm_timeout)) throw gloo::IoException("receive aborted");
      if (!out->waitSend(opts_.comm_timeout)) throw gloo::IoException("send aborted");
    });
  }

  // Unbound buffers on one fixed slot, like sendrecv: Gloo matches a pair's messages on a slot in
  // order, and every rank makes its calls in program order (ranks idle in a step make none).
  void exchange(const void* send, size_t send_bytes, int send_peer, void* recv, size_t recv_bytes,
                int recv_peer) override {
    std::vector<uint8_t> copy;
    if (!exchange_prologue(info_, &send, send_bytes, &send_peer, recv, recv_bytes, &recv_peer, &copy)) return;
    const std::string peers = send_peer == -1   ? "rank " + std::to_string(recv_peer)
                              : recv_peer == -1 ? "rank " + std::to_string(send_peer)
                                                : pair_name(send_peer, recv_peer);
    guarded("exchange", peers, [&] {
      const uint64_t slot = gloo::Slot::build(kExchangeSlotPrefix, 0);
      std::unique_ptr<gloo::transport::UnboundBuffer> in, out;
      if (recv_peer != -1) {
        in = context_->createUnboundBuffer(recv, recv_bytes);
        in->recv(recv_peer, slot);
      }
      if (send_peer != -1) {
        out = context_->createUnboundBuffer(const_cast<void*>(send), send_bytes);
        out->send(send_peer, slot);
      }
      if (in) {
        waiting_for_ = "rank " + std::to_string(recv_peer);
        if (!in->waitRecv(opts_.comm_timeout)) throw gloo::IoException("receive aborted");
      }
      if (out) {
        waiting_for_ = "rank " + std::to_string(send_peer);
        if (!out->waitSend(opts_.comm_timeout)) throw gloo::IoException("send aborted");
      }
    });
  }

  // gloo::allreduce whatever the size (allreduce_sum picks the direct exchange for small ones).
  void library_allreduce_sum(float* data, size_t n) override { gloo_allreduce<float>(data, n, &sum_f32); }
  void library_allreduce_sum_f16(half_bits* data, size_t n) override {
    gloo_allreduce<gloo::float16>(reinterpret_cast<gloo::float16*>(data), n, &sum_f16);
  }

  // The direct exchange sums in rank order; Gloo's ring (above kDirectAllreduceMaxBytes) does not.
  bool sums_in_rank_order(size_t bytes) const override {
    return info_.size <= 2 || bytes * size_t(info_.size - 1) <= kDirectAllreduceMaxBytes;
  }
  uint64_t sync_lane_rounds() const override { return lane_rounds_; }
  std::unique_ptr<GatherChannel> open_gather_channel(size_t bytes) override {
    if (info_.size == 1) return Communicator::open_gather_channel(bytes);
    if (gather_channels_ == kMaxGatherChannels)
      throw std::logic_error(me() + ": more than " + std::to_string(kMaxGatherChannels) + " gather channels");
    const int id = gather_channels_++;
    if (lane_) {
      if (auto region = lane_->open_region(bytes))
        return std::unique_ptr<GatherChannel>(new LaneGatherChannel(this, std::move(region)));
    }
    return std::unique_ptr<GatherChannel>(new GlooGatherChannel(this, id, bytes));
  }

 private:
  std::string me() const { return describe_rank(info_); }
  ms remaining_start_time() const {
    auto left = std::chrono::duration_cast<ms>(start_ + opts_.start_timeout - Clock::now());
    return std::max(left, ms(1));
  }
  uint32_t next_tag() { return tag_++; }

  static std::string pair_name(int a, int b) {
    if (a == b) return "rank " + std::to_string(a);
    return "rank " + std::to_string(a) + " and rank " + std::to_string(b);
  }
  std::string broadcast_peers(int root) const {
    const int n = info_.size;
    const int vrank = (info_.rank - root + n) % n;
    if (vrank == 0) return "the ranks it sends to";
    int high = 1;
    while ((high << 1) <= vrank) high <<= 1;
    const int parent = ((vrank ^ high) + root) % n;
    return "rank " + std::to_string(parent) +
           (parent == root ? " (the root)" : " (forwarding root " + std::to_string(root) + "'s data)");
  }

  template <typename T>
  void allreduce(T* data, size_t n, void (*reduce)(void*, const void*, const void*, size_t)) {
    if (n == 0 || info_.size == 1) return;
    const int sz = info_.size;
    const size_t bytes = n * sizeof(T);
    if (bytes * (sz - 1) <= kDirectAllreduceMaxBytes) {
      guarded("allreduce", "the other ranks", [&] { direct_allreduce(data, n, reduce); });
      return;
    }
    gloo_allreduce(data, n, reduce);
  }

  // Gloo's own allreduce (gloo::allreduce with the algorithm unspecified: Gloo picks its ring).
  template <typename T>
  void gloo_allreduce(T* data, size_t n, void (*reduce)(void*, const void*, const void*, size_t)) {
    if (n == 0 || info_.size == 1) return;
    const int sz = info_.size, r = info_.rank;
    guarded("allreduce", "ring neighbours " + pair_name((r + 1) % sz, (r + sz - 1) % sz), [&] {
      gloo::AllreduceOptions o(context_);
      o.setOutput(data, n);
      o.setReduceFunction(reduce);
      o.setTag(next_tag());
      o.setTimeout(opts_.comm_timeout);
      gloo::allreduce(o);
    });
  }

  // Small buffers: every rank sends its whole vector to every other rank in one round, then
  // sums all vectors in rank order (so every rank gets the same bits). One message latency
  // instead of the ring's 2(n-1) dependent steps, for (n-1) times the bytes.
  //
  // The first such allreduce of at least kChannelMinBytes binds the gradient channel to its size
  // (every rank makes the same calls, so every rank binds the same size). An allreduce of that size
  // finds its receives posted already: they are re-posted right after the previous one finished, so
  // Gloo's receive-ready notices travel while the ranks compute, and a rank's send goes straight onto
  // the socket instead of waiting for a notice from a peer that is only now arriving (which costs
  // two thread wake-ups on each side, on the step's critical path).
  template <typename T>
  void direct_allreduce(T* data, size_t n, void (*reduce)(void*, const void*, const void*, size_t)) {
    const int sz = info_.size, r = info_.rank;
    const size_t bytes = n * sizeof(T);
    // Track who has not delivered yet, so an error can name them.
    std::vector<bool> arrived(sz, false);
    arrived[r] = true;
    auto missing = [&] {
      std::string list;
      int count = 0;
      for (int p = 0; p < sz; ++p)
        if (!arrived[p]) list += (count++ ? ", " : "") + std::to_string(p);
      return count == 0 ? std::string("the other ranks") : (count == 1 ? "rank " : "ranks ") + list;
    };
    waiting_for_ = missing();
    if (chan_.bytes == 0 && bytes >= kChannelMinBytes) bind_channel(bytes);
    const bool on_channel = chan_.bytes == bytes;
    if (on_channel && chan_.lane) {
      lane_allreduce(data, n, reduce);
      return;
    }
    std::unique_ptr<gloo::transport::UnboundBuffer> own;
    gloo::transport::UnboundBuffer* buf;
    uint8_t* all;
    uint64_t slot;
    if (on_channel) {
      if (!chan_.posted) post_channel();
      buf = chan_.buf.get();
      all = chan_.all.data();
      slot = channel_slot();
    } else {
      scratch_.resize(bytes * sz);
      all = scratch_.data();
      own = context_->createUnboundBuffer(all, bytes * sz);
      buf = own.get();
      slot = gloo::Slot::build(kDirectAllreduceSlotPrefix, next_tag());
      post_receives(buf, slot, bytes);
    }
    std::memcpy(all + r * bytes, static_cast<const void*>(data), bytes);
    for (int k = 1; k < sz; ++k) buf->send((r + k) % sz, slot, r * bytes, bytes);
    for (int k = 1; k < sz; ++k) {
      int src = -1;
      if (!buf->waitRecv(&src, opts_.comm_timeout)) throw gloo::IoException("receive aborted");
      if (src >= 0 && src < sz) arrived[src] = true;
      waiting_for_ = missing();
    }
    for (int k = 1; k < sz; ++k)
      if (!buf->waitSend(opts_.comm_timeout)) throw gloo::IoException("send aborted");
    std::memcpy(static_cast<void*>(data), all, bytes);
    for (int k = 1; k < sz; ++k) reduce(data, data, all + k * bytes, n);
    if (on_channel) {  // the peers' vectors are used up: open the next round's receives now
      ++chan_.seq;
      chan_.posted = false;
      try {
        post_channel();
      } catch (const std::exception&) {
        // A peer went away after this round: the next collective reports it, naming the peer.
      }
    }
  }

  // The gradient channel: on the sync lane when it has room for it, else unbound buffers whose
  // receives are posted a round ahead.
  void bind_channel(size_t bytes) {
    chan_.bytes = bytes;
    if (lane_) chan_.lane = lane_->open_region(bytes);
    if (chan_.lane) return;
    chan_.all.assign(bytes * size_t(info_.size), 0);
    chan_.buf = context_->createUnboundBuffer(chan_.all.data(), bytes * size_t(info_.size));
  }

  // For the sync lane's regions: the peer each write or read deals with, so an error names it.
  std::function<void(int)> naming_peer() {
    return [this](int peer) { waiting_for_ = "rank " + std::to_string(peer); };
  }

  // The direct exchange on the sync lane: this thread writes its vector to every peer and reads
  // theirs, then sums in rank order as direct_allreduce does (the same bits).
  template <typename T>
  void lane_allreduce(T* data, size_t n, void (*reduce)(void*, const void*, const void*, size_t)) {
    GlooSyncLane::Region& region = *chan_.lane;
    const size_t bytes = n * sizeof(T);
    std::memcpy(region.part(info_.rank), static_cast<const void*>(data), bytes);
    region.send_own(naming_peer());
    region.receive(naming_peer());
    ++lane_rounds_;
    std::memcpy(static_cast<void*>(data), region.all(), bytes);
    for (int k = 1; k < info_.size; ++k) reduce(data, data, region.all() + k * bytes, n);
  }

  // One receive per peer into buf at peer * bytes, for the round tagged slot.
  void post_receives(gloo::transport::UnboundBuffer* buf, uint64_t slot, size_t bytes) {
    const int sz = info_.size, r = info_.rank;
    for (int k = 1; k < sz; ++k) {
      const int from = (r + sz - k) % sz;
      buf->recv(from, slot, from * bytes, bytes);
    }
  }
  uint64_t channel_slot() const { return gloo::Slot::build(kChannelSlotPrefix, chan_.seq); }
  void post_channel() {
    post_receives(chan_.buf.get(), channel_slot(), chan_.bytes);
    chan_.posted = true;
  }

  // Runs one collective; translates whatever Gloo throws into a one-line runtime_error.
  template <typename F>
  void guarded(const char* op, const std::string& peers, F&& body) {
    if (!broken_.empty())
      throw std::runtime_error(me() + ": gloo " + op + " refused: the communicator failed earlier (" + broken_ + ")");
    std::string what;
    waiting_for_.clear();
    try {
      body();
      return;
    } catch (const std::exception& e) {
      what = short_gloo_message(e.what());
    }
    const std::string& who = waiting_for_.empty() ? peers : waiting_for_;
    std::string msg;
    if (contains(what, "Timed out") || contains(what, "timed out") || contains(what, "Timeout") ||
        contains(what, "timeout"))  // the sync lane's blocking reads and writes: "Read timeout"
      msg = me() + ": gloo " + op + " timed out after " + seconds(opts_.comm_timeout) + " waiting for " + who +
            " (a peer stopped responding)";
    else if (contains(what, "closed") || contains(what, "reset") || contains(what, "Broken pipe") ||
             contains(what, "Read error") || contains(what, "Write error") || contains(what, "refused"))
      // Several ranks still owed data: Gloo does not say whose connection broke, so say what is known.
      msg = me() + ": gloo " + op +
            (who.compare(0, 6, "ranks ") == 0
                 ? " lost a connection while still waiting for " + who + " (did one of them exit?): "
                 : " lost the connection to " + who + " (did a rank exit?): ") +
            what;
    else
      msg = me() + ": gloo " + op + " failed (with " + who + "): " + what;
    broken_ = op + std::string(": ") + what;
    throw std::runtime_error(msg);
  }

  void open_store() {
    const ms t = opts_.start_timeout;
    if (!opts_.rendezvous_dir.empty()) {
      const std::string& dir = opts_.rendezvous_dir;
      struct stat st;
      if (stat(dir.c_str(), &st) != 0) {
        if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
          throw std::runtime_error(me() + ": cannot create --rendezvous-dir " + dir + ": " + std::strerror(errno));
      } else if (!S_ISDIR(st.st_mode)) {
        throw std::runtime_error(me() + ": --rendezvous-dir " + dir + " is not a directory");
      }
      try {
        store_.reset(new FileRendezvous(dir, t));
      } catch (const std::exception& e) {
        throw std::runtime_error(me() + ": cannot use --rendezvous-dir " + dir + ": " + short_gloo_message(e.what()));
      }
      return;
    }
    if (!info_.c10d_store_addr.empty()) {
      try {
        store_.reset(open_c10d_store(t));
      } catch (const std::exception& e) {
        throw std::runtime_error(me() + " (torchrun RANK=" + std::to_string(info_.rank) + " WORLD_SIZE=" +
                                 std::to_string(info_.size) + ", MASTER_ADDR:MASTER_PORT=" + info_.c10d_store_addr +
                                 (info_.c10d_store_on_rank0 ? ", TORCHELASTIC_USE_AGENT_STORE=False" : "") +
                                 "): " + short_gloo_message(e.what()));
      }
      return;
    }
    if (uses_slurm_store(info_)) {
      try {
        SlurmStore slurm = open_slurm_store(info_, iface_, t);
        slurm_node_addr_ = slurm.node_addr;
        store_.reset(new ClientRendezvous(std::move(slurm), t));
      } catch (const std::exception& e) {
        throw std::runtime_error(me() + " (srun, Slurm job " + info_.slurm_job + " step " + info_.slurm_step +
                                 "): Gloo rendezvous: " + short_gloo_message(e.what()));
      }
      return;
    }
    try {
      auto* client = new ClientRendezvous(info_.store_addr, info_.secret, t);
      store_.reset(client);
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": cannot reach the launcher's rendezvous store at " + info_.store_addr + ": " +
                               short_gloo_message(e.what()));
    }
  }

  // --network-interface, else GLOO_SOCKET_IFNAME (comm/interface_choice.h).
  void choose_iface() {
    try {
      iface_ = choose_interface(opts_.network_interface, std::getenv("GLOO_SOCKET_IFNAME"));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(me() + ": " + e.what());
    }
  }

  // torchrun's store; rank 0 first starts serving it when the agent does not (see C10dRendezvous).
  // A problem the server sees with a client (a malformed request) is one line on rank 0's stderr.
  C10dRendezvous* open_c10d_store(ms t) {
    const bool hosted = info_.c10d_store_on_rank0;
    std::unique_ptr<C10dStoreServer> server;
    if (hosted && info_.rank == 0) {
      std::string host;
      int port = 0;
      split_host_port(info_.c10d_store_addr, &host, &port);
      const std::string who = me();
      server.reset(new C10dStoreServer(
          host, port, [who](const std::string& line) { std::fprintf(stderr, "%s: %s\n", who.c_str(), line.c_str()); }));
    }
    return new C10dRendezvous(info_.c10d_store_addr, t, std::move(server), hosted);
  }

  // Gloo's address: the chosen interface (a name or an address); else the launcher's
  // BARESGD_HOST_ADDR; else 127.0.0.1 when every rank is on this host; else, under plain srun,
  // this node's NodeAddr (from scontrol, comm/slurm_store.h); else Gloo resolves gethostname().
  // A loopback address other than one the user wrote out is spread over the host's ranks: local
  // rank r binds base + 256 r (comm/loopback_spread.h), so 256 ranks on one host do not run out
  // of ports on one address.
  void open_device() {
    gloo::transport::tcp::attr attr;
    if (!iface_.empty()) {
      const std::string& ni = iface_.value;
      if (is_ip_literal(ni)) {
        attr.hostname = ni;  // an address the user wrote: exactly that one
      } else {
        if (if_nametoindex(ni.c_str()) == 0)
          throw std::runtime_error(me() + ": " + iface_.named() +
                                   " is neither an IP address nor a network interface on this host");
        const std::string ip = loopback_ipv4_of(iface_);
        if (!ip.empty())
          attr.hostname = spread_over_local_ranks(ip);
        else
          attr.iface = ni;
      }
      bind_desc_ = ni;
    } else if (!info_.host_addr.empty()) {
      attr.hostname = spread_over_local_ranks(info_.host_addr);
      bind_desc_ = attr.hostname;
    } else if (info_.local_size == info_.size) {
      attr.hostname = spread_over_local_ranks("127.0.0.1");  // every rank on this host: stay on loopback
      bind_desc_ = attr.hostname;
    } else if (!slurm_node_addr_.empty()) {
      attr.hostname = spread_over_local_ranks(slurm_node_addr_);
      bind_desc_ = attr.hostname;
    } else {
      bind_desc_ = "the address of this host's name";  // Gloo resolves gethostname()
    }
    const std::set<long> before = thread_ids();
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": cannot bind Gloo to " + bind_desc_ + ": " + short_gloo_message(e.what()) +
                               no_free_port(e.what(), attr.hostname));
    }
    demote_device_threads(before);
    // Gloo describes the device as "tcp, pci=, iface=lo, speed=-1, addr=[127.0.0.2]".
    const std::string d = device_->str();
    const size_t a = d.find("addr=["), i = d.find("iface=");
    if (a != std::string::npos && d.find(']', a) != std::string::npos) {
      bind_desc_ = d.substr(a + 6, d.find(']', a) - a - 6);
      device_ip_ = bind_desc_;
      if (i != std::string::npos) bind_desc_ += " (" + d.substr(i + 6, d.find(',', i) - i - 6) + ")";
    }
  }

  // The IPv4 loopback address of a chosen interface (lo: 127.0.0.1); "" for any other interface.
  static std::string loopback_ipv4_of(const InterfaceChoice& choice) {
    try {
      const std::string ip = interface_choice_ipv4(choice);
      return is_ipv4_loopback(ip) ? ip : "";
    } catch (const std::exception&) {
      return "";  // no IPv4 address: Gloo picks the interface's address itself
    }
  }

  std::string spread_over_local_ranks(const std::string& base) const {
    try {
      return loopback_address_for_local_rank(base, info_.local_rank);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(me() + ": " + e.what());
    }
  }

  // The hint an error gets when this rank's address ran out of ports (comm/loopback_spread.h).
  std::string no_free_port(const std::string& error, const std::string& ip) const {
    std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
    std::string range;
    std::getline(range_file, range);
    const bool user_wrote_loopback = !iface_.empty() && is_ip_literal(iface_.value) && is_ipv4_loopback(iface_.value);
    return no_free_port_hint(error, ip, range, user_wrote_loopback);
  }

  static std::set<long> thread_ids() {
    std::set<long> ids;
    if (DIR* d = opendir("/proc/self/task")) {
      while (struct dirent* e = readdir(d))
        if (e->d_name[0] != '.') ids.insert(std::atol(e->d_name));
      closedir(d);
    }
    return ids;
  }

  // Gloo's device thread (one per tcp device, started by CreateDevice) reads every socket. When a
  // socket is readable while a user thread holds that pair's lock (our send or receive posting),
  // it skips the pair and calls epoll_wait again at once: a busy spin on a level-triggered fd.
  // On a host whose every core runs a compute thread that spinner preempts the lock holder or the
  // other rank's compute (docs/comm.md has what it cost). In SCHED_IDLE it runs only
  // when a core would idle anyway, which is exactly when it has work: while this rank waits inside
  // a collective. (CFS still gives it a small share on a saturated host, so it never starves.)
  // BARESGD_GLOO_IDLE_DEVICE=0 leaves the thread in the normal class.
  void demote_device_threads(const std::set<long>& before) {
    const char* env = std::getenv("BARESGD_GLOO_IDLE_DEVICE");
    if (env && std::string(env) == "0") return;
    for (long tid : thread_ids()) {
      if (before.count(tid)) continue;
      struct sched_param sp = {};
      sched_setscheduler(static_cast<pid_t>(tid), SCHED_IDLE, &sp);  // best effort: failure costs speed only
    }
  }

  std::string job_key(const std::string& what, int rank) const {
    return info_.job_id + "/baresgd/" + what + "/" + std::to_string(rank);
  }

  void hello() {
    bool first = true;
    try {
      first = store_->claim(job_key("claim", info_.rank));
      if (first && info_.rank == 0 && info_.secret.empty()) {
        const std::string secret = random_secret_hex();
        store_->set(gate_secret_key(), std::vector<char>(secret.begin(), secret.end()));
      }
      if (first) {
        std::ostringstream v;
        v << info_.size << ' ' << info_.hostname << ' ' << gate_->address() << ' ' << bind_desc_;
        const std::string s = v.str();
        store_->set(job_key("hello", info_.rank), std::vector<char>(s.begin(), s.end()));
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": cannot register in " + store_->where() + ": " + short_gloo_message(e.what()));
    }
    if (!first)
      throw std::runtime_error(me() + ": rank " + std::to_string(info_.rank) + " of job '" + info_.job_id +
                               "' is already registered in " + store_->where() +
                               " (two processes with the same rank, or a stale rendezvous directory from an "
                               "earlier run? Use an empty --rendezvous-dir or a new BARESGD_JOB_ID)");

    std::vector<int> missing;
    for (int r = 0; r < info_.size; ++r)
      if (r != info_.rank) missing.push_back(r);
    socket_io::Backoff pause(ms(1), ms(20));
    // Our stores answer all W hellos in one gather, polled until they are there: O(W) requests in
    // a rendezvous instead of a get per peer, W(W-1) (docs/comm.md, "Start-up at scale"). The loop
    // below then finds every hello cached; at the deadline it names the ranks still missing.
    if (store_->gathers()) wait_for_every_hello(&pause);
    while (!missing.empty()) {
      std::vector<int> still;
      for (int r : missing) {
        bool present = false;
        try {
          present = store_->has(job_key("hello", r));
        } catch (const std::exception& e) {
          throw std::runtime_error(me() + ": rendezvous failed while waiting for rank " + std::to_string(r) + " in " +
                                   store_->where() + ": " + short_gloo_message(e.what()));
        }
        if (!present) {
          still.push_back(r);
          continue;
        }
        check_peer_hello(r, store_->get(job_key("hello", r)));
      }
      missing.swap(still);
      if (missing.empty()) break;
      if (!pause.wait(start_ + opts_.start_timeout)) {
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
        if (missing.size() > 8) list += ", ...";
        throw std::runtime_error(me() + ": gloo rendezvous timed out after " + seconds(opts_.start_timeout) + ": rank" +
                                 (missing.size() > 1 ? "s " : " ") + list + " never registered (" +
                                 std::to_string(info_.size - static_cast<int>(missing.size())) + " of " +
                                 std::to_string(info_.size) + " ranks arrived; job '" + info_.job_id + "', " +
                                 store_->where() + "). Did every rank start, with the same job id and rendezvous?");
      }
    }
  }

  // Polls the gather of every rank's hello until all W are in the store or the start deadline.
  void wait_for_every_hello(socket_io::Backoff* pause) {
    const std::string prefix = info_.job_id + "/baresgd/hello/";
    for (;;) {
      try {
        if (store_->gather(prefix, info_.size)) return;
      } catch (const std::exception& e) {
        throw std::runtime_error(me() + ": rendezvous failed while waiting for every rank's hello in " +
                                 store_->where() + ": " + short_gloo_message(e.what()));
      }
      if (!pause->wait(start_ + opts_.start_timeout)) return;  // the key-by-key pass names who is missing
    }
  }

  void check_peer_hello(int r, const std::vector<char>& bytes) {
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    int size = -1;
    std::string host, gate;
    in >> size >> host >> gate;
    if (size != info_.size)
      throw std::runtime_error(me() + ": rank " + std::to_string(r) + " (host " + host +
                               ") registered with world size " + std::to_string(size) + " but this rank has " +
                               std::to_string(info_.size) + " (two jobs sharing job id '" + info_.job_id + "'?)");
    gates_[r] = gate;
  }

  std::string gate_secret_key() const { return info_.job_id + "/baresgd/gate-secret"; }

  // Step 3: the one listening socket of this rank (comm/pair_gate), for both meshes;
  // BARESGD_GLOO_SYNC_LANE=0 (every rank alike) leaves out the sync lane's mesh.
  void open_gate() {
    const char* env = std::getenv("BARESGD_GLOO_SYNC_LANE");
    with_lane_ = !(env && std::string(env) == "0");
    if (device_ip_.empty())
      throw std::runtime_error(me() + ": cannot open its Gloo gate: no address in Gloo's device (" + device_->str() +
                               ")");
    try {
      gate_.reset(new PairGate(device_ip_, info_.rank, info_.size, with_lane_ ? 2 : 1));
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": " + e.what() + no_free_port(e.what(), device_ip_));
    }
    gates_.assign(info_.size, "");
  }

  // The job secret the gate proves: the launcher's, else the one rank 0 set before its hello.
  std::string gate_secret() {
    if (!info_.secret.empty()) return info_.secret;
    try {
      const std::vector<char> v = store_->get(gate_secret_key());
      return std::string(v.begin(), v.end());
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": cannot read the job's gate secret from " + store_->where() + ": " +
                               short_gloo_message(e.what()));
    }
  }

  // Test hook: BARESGD_TEST_STOP_IN_CONNECT=<rank> makes that rank stop itself (SIGSTOP) after its
  // hello, before phase A, so a test can watch the others' one deadline name it.
  void stop_here_for_test() const {
    const char* env = std::getenv("BARESGD_TEST_STOP_IN_CONNECT");
    if (env && *env && std::atoi(env) == info_.rank && std::string(env) == std::to_string(info_.rank)) raise(SIGSTOP);
  }

  // Step 5: phase A (every pair of both meshes authenticated by the gate, one deadline), then
  // phase B (the sockets handed to Gloo, main mesh then sync lane; local work, no waiting).
  void connect() {
    const std::string secret = gate_secret();
    stop_here_for_test();
    try {
      gate_->connect_all(secret, gates_, start_ + opts_.start_timeout, seconds(opts_.start_timeout));
    } catch (const std::exception& e) {
      throw std::runtime_error(me() + ": " + e.what() + " (bound to " + bind_desc_ + ")");
    }
    try {
      context_ = connect_gloo_mesh(device_, gate_.get(), 0, info_.rank, info_.size, std::max(info_.local_rank, 0),
                                   opts_.comm_timeout);
    } catch (const std::exception& e) {
      context_.reset();
      throw std::runtime_error(me() + ": gloo could not hand its authenticated connections to Gloo (bound to " +
                               bind_desc_ + "): " + short_gloo_message(e.what()) + no_free_port(e.what(), device_ip_));
    }
    if (with_lane_) {
      try {
        auto mesh = connect_gloo_mesh(device_, gate_.get(), 1, info_.rank, info_.size, std::max(info_.local_rank, 0),
                                      opts_.comm_timeout);
        lane_.reset(new GlooSyncLane(mesh, info_.rank, info_.size, spins()));
      } catch (const std::exception& e) {
        lane_.reset();
        throw std::runtime_error(me() + ": gloo could not connect its sync-mode pairs to its " +
                                 std::to_string(info_.size - 1) + " peer(s) (bound to " + bind_desc_ +
                                 "): " + short_gloo_message(e.what()) + no_free_port(e.what(), device_ip_));
      }
    }
    if (gate_->dropped()) std::fprintf(stderr, "%s: %s\n", me().c_str(), gate_->dropped_summary().c_str());
    gate_.reset();
  }

  // Whether a wait on the lane spins (CommOptions::spin_while_waiting); BARESGD_GLOO_SPIN=0 or 1 says
  // otherwise (to measure one against the other).
  bool spins() const {
    const char* env = std::getenv("BARESGD_GLOO_SPIN");
    if (env && (std::string(env) == "0" || std::string(env) == "1")) return std::string(env) == "1";
    return opts_.spin_while_waiting;
  }

  // After connectFullMesh every rank has read what it needs; a barrier makes that true of all of
  // them, then each removes its own keys (a --rendezvous-dir is left as it was found) and under
  // srun rank 0 stops its store. The launcher's store goes with the launcher: no barrier for it; each
  // rank only closes its connection.
  void leave_store() {
    if (!store_->leave_after_barrier()) {
      store_->close_connection();
      return;
    }
    barrier();
    store_->forget_own_keys();
  }

  RankInfo info_;
  CommOptions opts_;
  Clock::time_point start_;
  std::string bind_desc_;
  InterfaceChoice iface_;        // --network-interface, else GLOO_SOCKET_IFNAME
  std::string slurm_node_addr_;  // under plain srun: this node's NodeAddr, when scontrol gave it
  std::unique_ptr<RendezvousStore> store_;
  std::string device_ip_;           // the address Gloo's device is bound to (the gate's too)
  std::unique_ptr<PairGate> gate_;  // from open_gate to the end of connect
  std::vector<std::string> gates_;  // every rank's gate address, from its hello
  bool with_lane_ = true;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::unique_ptr<GlooSyncLane> lane_;  // null: BARESGD_GLOO_SYNC_LANE=0 or one rank
  uint64_t lane_rounds_ = 0;
  uint32_t tag_ = 0;
  std::string broken_;
  std::vector<uint8_t> scratch_;
  // The gradient channel (see direct_allreduce). Declared after context_, so destroyed before it.
  struct Channel {
    size_t bytes = 0;  // 0: not bound yet
    uint32_t seq = 0;  // tag of the round whose receives are (or will be) posted
    bool posted = false;
    std::vector<uint8_t> all;  // size * bytes: every rank's vector at rank * bytes
    std::unique_ptr<gloo::transport::UnboundBuffer> buf;
    std::unique_ptr<GlooSyncLane::Region> lane;  // when set, the channel runs there (all and buf unused)
  } chan_;
  std::string waiting_for_;  // set by a collective while it knows exactly whom it waits for
  int gather_channels_ = 0;  // opened so far: the next one's number (its slots)

  // One bucket of the overlapped averaging on the sync lane: start writes this rank's bytes to every
  // peer at once from the calling thread (the socket buffers take them whole), wait reads the peers'
  // bytes in the calling thread. Nothing moves in between, and nothing needs to: the kernel holds
  // the bytes until the peer's wait reads them.
  class LaneGatherChannel : public GatherChannel {
   public:
    LaneGatherChannel(GlooCommunicator* c, std::unique_ptr<GlooSyncLane::Region> region)
        : c_(c), region_(std::move(region)) {}
    void start(const void* in) override {
      std::memcpy(region_->part(c_->info_.rank), in, region_->bytes());
      c_->guarded("allreduce", "the other ranks", [&] { region_->send_own(c_->naming_peer()); });
    }
    const void* wait() override {
      c_->guarded("allreduce", "the other ranks", [&] { region_->receive(c_->naming_peer()); });
      ++c_->lane_rounds_;
      return region_->all();
    }

   private:
    GlooCommunicator* c_;
    std::unique_ptr<GlooSyncLane::Region> region_;
  };

  // One bucket of the overlapped averaging. Round k sends this rank's bytes to every peer on slot
  // (k, channel) straight from the calling thread: the peers' receives for round k were posted in
  // their round k-1 start (round 0: at open), and Gloo writes a send onto the socket at once when
  // the peer's receive-ready notice is already here. It is: the notice travels ahead of the peer's
  // round k-1 data on the same connection, and our round k-1 wait read that data. So no round
  // waits for a device thread to answer a notice; the device thread (SCHED_IDLE) only copies the
  // bytes the kernel already holds out of the socket when this rank waits. Two buffers alternate
  // so round k+1's receives can be posted while round k's are in flight.
  class GlooGatherChannel : public GatherChannel {
   public:
    GlooGatherChannel(GlooCommunicator* c, int id, size_t bytes) : c_(c), id_(id), bytes_(bytes) {
      const size_t all = bytes * size_t(c->info_.size);
      c_->guarded("allreduce", "the other ranks", [&] {
        for (int b = 0; b < 2; ++b) {
          all_[b].assign(all, 0);
          buf_[b] = c_->context_->createUnboundBuffer(all_[b].data(), all);
        }
        post(0);
      });
    }
    void start(const void* in) override {
      const int sz = c_->info_.size, r = c_->info_.rank;
      uint8_t* all = all_[round_ % 2].data();
      std::memcpy(all + size_t(r) * bytes_, in, bytes_);
      c_->guarded("allreduce", "the other ranks", [&] {
        post(round_ + 1);
        if (bytes_ == 0) return;
        for (int k = 1; k < sz; ++k) buf_[round_ % 2]->send((r + k) % sz, slot(round_), size_t(r) * bytes_, bytes_);
      });
    }
    const void* wait() override {
      const int sz = c_->info_.size, r = c_->info_.rank;
      gloo::transport::UnboundBuffer* buf = buf_[round_ % 2].get();
      c_->guarded("allreduce", "the other ranks", [&] {
        if (bytes_ == 0) return;
        std::vector<bool> arrived(sz, false);
        arrived[r] = true;
        for (int k = 1; k < sz; ++k) {
          c_->waiting_for_ = missing(arrived);
          int src = -1;
          if (!buf->waitRecv(&src, c_->opts_.comm_timeout)) throw gloo::IoException("receive aborted");
          if (src >= 0 && src < sz) arrived[src] = true;
        }
        c_->waiting_for_ = "the other ranks";
        for (int k = 1; k < sz; ++k)
          if (!buf->waitSend(c_->opts_.comm_timeout)) throw gloo::IoException("send aborted");
      });
      return all_[round_++ % 2].data();
    }

   private:
    uint64_t slot(uint32_t round) const {
      return gloo::Slot::build(kGatherChannelSlotPrefix, (round << 8) | uint32_t(id_));
    }
    // The receives of `round` (into its buffer, peer p's bytes at p * bytes).
    void post(uint32_t round) {
      if (bytes_ == 0) return;
      const int sz = c_->info_.size, r = c_->info_.rank;
      for (int k = 1; k < sz; ++k) {
        const int from = (r + sz - k) % sz;
        buf_[round % 2]->recv(from, slot(round), size_t(from) * bytes_, bytes_);
      }
    }
    static std::string missing(const std::vector<bool>& arrived) {
      std::string list;
      int count = 0;
      for (size_t p = 0; p < arrived.size(); ++p)
        if (!arrived[p]) list += (count++ ? ", " : "") + std::to_string(p);
      return (count == 1 ? "rank " : "ranks ") + list;
    }

    GlooCommunicator* c_;
    const int id_;
    const size_t bytes_;
    uint32_t round_ = 0;  // the round the next start sends (wraps: every rank wraps alike)
    std::vector<uint8_t> all_[2];
    std::unique_ptr<gloo::transport::UnboundBuffer> buf_[2];
  };
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const RankInfo& info, const CommOptions& opts) {
  return std::unique_ptr<Communicator>(new GlooCommunicator(info, opts));
}
