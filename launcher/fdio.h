// fdio: small file-descriptor and signal helpers shared by the launcher and the agent.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string>

void set_nonblocking(int fd);
void set_cloexec(int fd);
// Writes all of data to a blocking or non-blocking fd (waits with poll on EAGAIN). False on error
// (errno set), e.g. EPIPE.
bool write_all(int fd, const char* data, size_t n);
inline bool write_all(int fd, const std::string& s) { return write_all(fd, s.data(), s.size()); }
void close_fd(int* fd);  // close if >= 0, set to -1
// Reads what a non-blocking fd holds now into sink (keeping at most 1 MiB); closes it (-1) at EOF
// or on error.
void drain_into(int* fd, std::string* sink);
// sigaction(handler, SA_RESTART, nothing masked) for each of signals.
void install_signal_handler(void (*handler)(int), std::initializer_list<int> signals);
