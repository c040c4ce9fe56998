// tool_launch_store: a rank program for tests/test_launch_*.cc that does a rendezvous through
// ./launch's store the way a Gloo rank would: BARESGD_STORE_ADDR + BARESGD_SECRET from the
// environment, every rank publishes its host address, counts itself in, then reads everyone's.
//
//   tool_launch_store            prints "store ok rank=R size=N count=N peers=ADDR0,ADDR1,..."
//   tool_launch_store badsecret  connects with a wrong secret; prints "denied: <reason>" and exits 3
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "comm/store_client.h"

int main(int argc, char** argv) {
  const char* addr = getenv("BARESGD_STORE_ADDR");
  const char* secret = getenv("BARESGD_SECRET");
  const char* rank_s = getenv("BARESGD_RANK");
  const char* size_s = getenv("BARESGD_SIZE");
  const char* host = getenv("BARESGD_HOST_ADDR");
  if (!addr || !secret || !rank_s || !size_s || !host) {
    fprintf(stderr, "tool_launch_store: BARESGD_* variables missing\n");
    return 2;
  }
  int rank = atoi(rank_s), size = atoi(size_s);
  using std::chrono::milliseconds;
  if (argc > 1 && std::string(argv[1]) == "badsecret") {
    try {
      StoreClient c(addr, std::string(64, '0'), milliseconds(5000));
      c.set("x", "y");
      printf("accepted a wrong secret\n");
      return 0;
    } catch (const std::exception& e) {
      printf("denied: %s\n", e.what());
      return 3;
    }
  }
  try {
    StoreClient c(addr, secret, milliseconds(20000));
    c.add("count", 1);  // before publishing, so all addresses present => all counted
    c.set("addr/" + std::to_string(rank), host);
    std::string peers;
    for (int r = 0; r < size; ++r)
      peers += (r ? "," : "") + c.wait_get("addr/" + std::to_string(r), milliseconds(20000));
    std::string count = c.wait_get("count", milliseconds(20000));
    printf("store ok rank=%d size=%d count=%s peers=%s\n", rank, size, count.c_str(), peers.c_str());
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "tool_launch_store: %s\n", e.what());
    return 1;
  }
}
