// go_file: how a test and the processes it starts wait for each other's states instead of
// sleeping: a file appears when a state is reached. A shell rank waits for the test's go file with
// sh_wait_for (polling, at most 60 s, then it goes on anyway); the test waits for a file a rank
// writes with wait_for_file, or creates a go file with touch_file.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace testutil {

// Shell text (ends in "; ") that returns once path exists, or after 60 s. path may hold shell
// variables ($BARESGD_RANK); it must not hold spaces or quotes.
inline std::string sh_wait_for(const std::string& path) {
  return "i=0; while [ ! -e " + path + " ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; ";
}

// Creates path (empty) if it does not exist; true when it exists afterwards.
inline bool touch_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  return ::access(path.c_str(), F_OK) == 0;
}

// Waits until path exists and is not empty (true), or timeout_s passed (false).
inline bool wait_for_file(const std::string& path, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char c;
    const bool ready = fd >= 0 && ::read(fd, &c, 1) == 1;
    if (fd >= 0) ::close(fd);
    if (ready) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace testutil
