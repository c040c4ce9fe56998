// tool_launch_allreduce: a rank program for tests/test_launch_*.cc — end to end through ./launch and
// comm/: builds the communicator from the environment the launcher set (Gloo via the store and
// BARESGD_HOST_ADDR, or MPI under mpirun) and checks one allreduce and one broadcast.
//
//   tool_launch_allreduce   prints "allreduce ok backend=B rank=R size=N local=L/LS cross=C/CS"
//                           or "allreduce BAD ..." (exit 1); errors exit 2
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "comm/communicator.h"

int main() {
  try {
    CommOptions opts;
    opts.start_timeout = std::chrono::milliseconds(30000);
    auto comm = make_communicator(opts);
    int r = comm->rank(), n = comm->size();
    std::vector<float> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
    comm->allreduce_sum(v.data(), v.size());
    float ranks_sum = n * (n + 1) / 2.0f;
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) ok = ok && std::fabs(v[i] - ranks_sum * static_cast<float>(i % 7)) < 1e-3f;
    int token = r == 0 ? 4242 : -1;
    comm->broadcast(&token, sizeof token, 0);
    ok = ok && token == 4242;
    comm->barrier();
    printf("allreduce %s backend=%s rank=%d size=%d local=%d/%d cross=%d/%d\n", ok ? "ok" : "BAD", comm->backend_name(),
           r, n, comm->local_rank(), comm->local_size(), comm->cross_rank(), comm->cross_size());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    fprintf(stderr, "tool_launch_allreduce: %s\n", e.what());
    return 2;
  }
}
