// emulated_link: the Communicator that holds exchange()'s received messages (see emulated_link.h).
#include "comm/emulated_link.h"

#include <chrono>
#include <thread>

namespace {

class EmulatedLink : public Communicator {
 public:
  EmulatedLink(std::unique_ptr<Communicator> real, const LinkEmulation& link) : real_(std::move(real)), link_(link) {}

  // The one call that is delayed: the real exchange, then the received message held as the
  // link would (a step that receives nothing is not held).
  void exchange(const void* send, size_t send_bytes, int send_peer, void* recv, size_t recv_bytes,
                int recv_peer) override {
    real_->exchange(send, send_bytes, send_peer, recv, recv_bytes, recv_peer);
    if (recv_peer >= 0 && recv_bytes > 0 && recv_peer != rank())
      std::this_thread::sleep_for(std::chrono::duration<double>(link_.hold_s(recv_bytes)));
  }

  // Everything else passes straight through.
  const RankInfo& info() const override { return real_->info(); }
  const char* backend_name() const override { return real_->backend_name(); }
  void allreduce_sum(float* data, size_t n) override { real_->allreduce_sum(data, n); }
  void allreduce_sum(double* data, size_t n) override { real_->allreduce_sum(data, n); }
  void allreduce_sum_f16(half_bits* data, size_t n) override { real_->allreduce_sum_f16(data, n); }
  void broadcast(void* data, size_t bytes, int root) override { real_->broadcast(data, bytes, root); }
  void barrier() override { real_->barrier(); }
  void allgather(void* out, const void* in, size_t bytes) override { real_->allgather(out, in, bytes); }
  void sendrecv(const void* send, void* recv, size_t bytes, int peer) override {
    real_->sendrecv(send, recv, bytes, peer);
  }
  void library_allreduce_sum(float* data, size_t n) override { real_->library_allreduce_sum(data, n); }
  void library_allreduce_sum_f16(half_bits* data, size_t n) override { real_->library_allreduce_sum_f16(data, n); }
  bool sums_in_rank_order(size_t bytes) const override { return real_->sums_in_rank_order(bytes); }
  std::unique_ptr<GatherChannel> open_gather_channel(size_t bytes) override {
    return real_->open_gather_channel(bytes);
  }
  uint64_t sync_lane_rounds() const override { return real_->sync_lane_rounds(); }

 private:
  std::unique_ptr<Communicator> real_;
  LinkEmulation link_;
};

}  // namespace

std::unique_ptr<Communicator> emulate_link(std::unique_ptr<Communicator> real, const LinkEmulation& link) {
  if (!link.active()) return real;
  return std::make_unique<EmulatedLink>(std::move(real), link);
}
