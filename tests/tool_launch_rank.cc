// tool_launch_rank: a rank program for tests/test_launch_*.cc — floods, long lines, binary bytes,
// process families and signal behaviour on demand. Extra trailing arguments (markers for pgrep)
// are ignored.
//
//   tool_launch_rank lines N            N numbered lines to stdout and N to stderr, written in
//                                       irregular chunks so lines straddle write() calls
//   tool_launch_rank bigline BYTES      one line of BYTES bytes, then "tail" without a newline
//   tool_launch_rank binary             every byte value except \n and \r on one line, then UTF-8
//   tool_launch_rank family SECS        forks a child (and it a grandchild) that sleep SECS,
//                                       prints "ready <pid>" and sleeps SECS itself
//   tool_launch_rank ignore-term SECS   survives SIGTERM (prints "ignored SIGTERM" for each one),
//                                       prints "ready <pid>", sleeps SECS
//   tool_launch_rank sleep SECS         prints "ready <pid>", sleeps SECS
//   tool_launch_rank exit CODE          exits with CODE
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(90);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Writes s in chunks of pseudo-random sizes (1..5000 bytes).
void write_chunked(int fd, const std::string& s, unsigned seed) {
  size_t pos = 0;
  while (pos < s.size()) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 1 + (seed >> 8) % 5000;
    if (n > s.size() - pos) n = s.size() - pos;
    write_all(fd, s.data() + pos, n);
    pos += n;
  }
}

int rank_env() {
  const char* r = getenv("BARESGD_RANK");
  if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
  return r ? atoi(r) : -1;
}

void say_ignored_sigterm(int) {
  static const char kLine[] = "ignored SIGTERM\n";
  if (write(1, kLine, sizeof kLine - 1) < 0) {}
}

void sleep_secs(double s) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tool_launch_rank MODE ARGS\n");
    return 2;
  }
  std::string mode = argv[1];
  double arg = argc > 2 ? atof(argv[2]) : 0;
  int rank = rank_env();
  if (mode == "lines") {
    long n = static_cast<long>(arg);
    std::string out, err;
    for (long i = 0; i < n; ++i) {
      std::string pad(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
      out += "r" + std::to_string(rank) + " out " + std::to_string(i) + " " + pad + " end\n";
      err += "r" + std::to_string(rank) + " err " + std::to_string(i) + " " + pad + " end\n";
    }
    write_chunked(1, out, 7u + static_cast<unsigned>(rank));
    write_chunked(2, err, 11u + static_cast<unsigned>(rank));
    return 0;
  }
  if (mode == "bigline") {
    size_t n = static_cast<size_t>(arg);
    std::string s(n, 'x');
    for (size_t i = 0; i < n; i += 1000) s[i] = static_cast<char>('A' + (i / 1000) % 26);
    s += "\n";
    write_chunked(1, s, 3u);
    write_all(1, "tail", 4);
    return 0;
  }
  if (mode == "binary") {
    std::string s;
    for (int b = 0; b < 256; ++b)
      if (b != '\n' && b != '\r') s += static_cast<char>(b);
    s += "\n";
    s += "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n";
    write_all(1, s.data(), s.size());
    return 0;
  }
  if (mode == "family") {
    pid_t c = fork();
    if (c == 0) {
      pid_t g = fork();
      (void)g;
      sleep_secs(arg);
      _exit(0);
    }
    printf("ready %d\n", static_cast<int>(getpid()));
    fflush(stdout);
    sleep_secs(arg);
    return 0;
  }
  if (mode == "ignore-term") {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = say_ignored_sigterm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    printf("ready %d\n", static_cast<int>(getpid()));
    fflush(stdout);
    sleep_secs(arg);
    return 0;
  }
  if (mode == "sleep") {
    printf("ready %d\n", static_cast<int>(getpid()));
    fflush(stdout);
    sleep_secs(arg);
    return 0;
  }
  if (mode == "exit") return static_cast<int>(arg);
  fprintf(stderr, "tool_launch_rank: unknown mode %s\n", mode.c_str());
  return 2;
}
