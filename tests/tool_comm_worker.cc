// tool_comm_worker: one rank of a multi-process communicator test. It builds its Communicator
// through the real factory (make_communicator: rank discovery from BARESGD_* / OMPI_* / SLURM_*)
// and runs a script:
//   --script check   (default) the closed-form collectives of tests/comm_checks.h; prints
//                    "OK rank=R size=S backend=B local=L/LS cross=C/CS" or "FAIL ..." lines
//   --script info    prints "INFO rank=R size=S backend=B source=X local=L/LS cross=C/CS host=H"
//                    and "SOCKETS <local ip list>" (the IPv4 addresses this process's TCP
//                    sockets are bound to), after a barrier
//   --script algorithms  the (light) checks of tests/allreduce_checks.h for each of --algorithms A,B,...
//                    (comm/allreduce.h names); prints "OK ..." or "FAIL ..." lines like check
//   --script bench   allreduce_sum of --elements floats, --iters times after 10 warm-ups;
//                    rank 0 prints "BENCH backend=B size=S elements=N avg_us=X"
// Options: --communication B, --rendezvous-dir D, --network-interface I, --start-timeout-ms N,
//          --comm-timeout-ms N, --big (add the (1<<20)+3 element allreduce), --algorithms A,B,...
// Exit status: 0 all passed, 1 a check failed, 2 an exception (message on stderr), 64 usage.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "tests/allreduce_checks.h"
#include "tests/comm_checks.h"

namespace {

std::string info_line(const Communicator& c) {
  const RankInfo& i = c.info();
  char buf[512];
  std::snprintf(buf, sizeof buf, "rank=%d size=%d backend=%s source=%s local=%d/%d cross=%d/%d host=%s", i.rank, i.size,
                c.backend_name(), i.source.c_str(), i.local_rank, i.local_size, i.cross_rank, i.cross_size,
                i.hostname.c_str());
  return buf;
}

// "local->peer" addresses of this process's TCP sockets (getsockname/getpeername on every fd).
std::string socket_addresses() {
  std::set<std::string> addrs;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return "?";
  while (dirent* e = readdir(d)) {
    int fd = std::atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d)) continue;
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int type = 0;
    socklen_t tlen = sizeof type;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) continue;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) continue;
    auto ip_of = [](const sockaddr_storage& a) -> std::string {
      char ip[INET6_ADDRSTRLEN] = {0};
      if (a.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, ip, sizeof ip);
      else if (a.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, ip, sizeof ip);
      return ip;
    };
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) continue;
    sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    std::string entry = ip_of(ss) + "->";
    entry += getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0 ? ip_of(peer) : std::string("listen");
    addrs.insert(entry);
  }
  closedir(d);
  std::string out;
  for (const auto& a : addrs) out += (out.empty() ? "" : " ") + a;
  return out;
}

int usage(const char* msg) {
  std::fprintf(stderr, "tool_comm_worker: %s\n", msg);
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  CommOptions opts;
  std::string script = "check";
  size_t elements = 21840;
  int iters = 200;
  bool big = false;
  std::vector<AllreduceAlgorithm> algorithms;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--communication")
        opts.backend = value();
      else if (a == "--rendezvous-dir")
        opts.rendezvous_dir = value();
      else if (a == "--network-interface")
        opts.network_interface = value();
      else if (a == "--start-timeout-ms")
        opts.start_timeout = std::chrono::milliseconds(std::stol(value()));
      else if (a == "--comm-timeout-ms")
        opts.comm_timeout = std::chrono::milliseconds(std::stol(value()));
      else if (a == "--script")
        script = value();
      else if (a == "--elements")
        elements = std::stoul(value());
      else if (a == "--iters")
        iters = std::stoi(value());
      else if (a == "--big")
        big = true;
      else if (a == "--algorithms") {
        std::string list = value() + ",";
        for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1)
          algorithms.push_back(parse_allreduce_algorithm(list.substr(at, comma - at)));
      } else
        return usage(("unknown argument " + a).c_str());
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }

  try {
    std::unique_ptr<Communicator> comm = make_communicator(opts);
    if (script == "info") {
      comm->barrier();
      std::printf("INFO %s\nSOCKETS %s\n", info_line(*comm).c_str(), socket_addresses().c_str());
      comm->barrier();
      return 0;
    }
    if (script == "bench") {
      std::vector<float> v(elements, 1.0f);
      for (int i = 0; i < 10; ++i) comm->allreduce_sum(v.data(), v.size());
      comm->barrier();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) comm->allreduce_sum(v.data(), v.size());
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      double mine = us;
      comm->allreduce_sum(&mine, 1);
      if (comm->rank() == 0)
        std::printf("BENCH backend=%s size=%d elements=%zu avg_us=%.1f\n", comm->backend_name(), comm->size(), elements,
                    mine / comm->size());
      return 0;
    }
    std::vector<std::string> failures;
    if (script == "check") {
      commcheck::Checker c{*comm, {}};
      c.run_all(big);
      failures = c.failures;
    } else if (script == "algorithms") {
      allreducecheck::Checker c(*comm);
      c.run_all(algorithms, /*light=*/true);
      failures = c.failures;
    } else {
      return usage(("unknown script " + script).c_str());
    }
    // Everybody reports; a failure anywhere fails the run (exit 1 on the failing rank).
    for (const auto& f : failures) std::printf("FAIL %s\n", f.c_str());
    if (failures.empty()) std::printf("OK %s\n", info_line(*comm).c_str());
    std::fflush(stdout);
    comm->barrier();
    return failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tool_comm_worker: %s\n", e.what());
    return 2;
  }
}
