// backend_single: the world of one rank. Reductions are the identity, gathers and exchanges copy.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm_internal.h"

namespace {

class SingleCommunicator : public Communicator {
 public:
  explicit SingleCommunicator(const RankInfo& info) : info_(info) {
    info_.backend = "single";
    info_.rank = info_.local_rank = info_.cross_rank = 0;
    info_.size = info_.local_size = info_.cross_size = 1;
  }
  const RankInfo& info() const override { return info_; }
  const char* backend_name() const override { return "single"; }

  void allreduce_sum(float*, size_t) override {}
  void allreduce_sum(double*, size_t) override {}
  void allreduce_sum_f16(half_bits*, size_t) override {}
  void broadcast(void*, size_t, int root) override { check_peer(info_, root, "broadcast from root"); }
  void barrier() override {}
  void allgather(void* out, const void* in, size_t bytes) override {
    if (bytes) std::memmove(out, in, bytes);
  }
  void sendrecv(const void* send, void* recv, size_t bytes, int peer) override {
    check_peer(info_, peer, "sendrecv");
    if (bytes) std::memmove(recv, send, bytes);
  }
  void exchange(const void* send, size_t send_bytes, int send_peer, void* recv, size_t recv_bytes,
                int recv_peer) override {
    std::vector<uint8_t> copy;  // the only valid peer is this rank: the prologue copies or throws
    exchange_prologue(info_, &send, send_bytes, &send_peer, recv, recv_bytes, &recv_peer, &copy);
  }

 private:
  RankInfo info_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator(const RankInfo& info) {
  return std::unique_ptr<Communicator>(new SingleCommunicator(info));
}
