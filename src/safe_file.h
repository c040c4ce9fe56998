// safe_file: how baresgd opens the files it reads and writes, so that another local user cannot
// redirect a write (a symlink planted where root's launcher or trainer will write) and no input
// can block the process or exhaust its memory (a FIFO, /dev/zero, a 3 GB sparse file).
//
// Reading: a file is read only if it is a regular file, opened O_NONBLOCK (opening a FIFO then
// returns at once, and fstat names it), with its size checked against the most it can be before
// a byte is read. Symlinks are followed for reading: what they point at is checked instead.
//
// Writing: the directory is checked first: one that other users can write is refused unless it
// is sticky (as /tmp: others cannot remove or rename our files there) and owned by the caller or
// root. The file is then opened relative to that directory with O_NOFOLLOW (a symlink in its place
// is refused, never followed), must be a regular file owned by the caller, and only then
// truncated. Temporary files are created with O_EXCL.
//
// Every error is one line: "PATH: WHAT ..." naming the path and what it was for.
#pragma once

#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>

struct SafeFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "a FIFO", "a directory", "a character device", ... for a stat mode (st_mode).
std::string file_kind(unsigned mode);

// Why try_open_regular_for_read refused a file: it could not be opened (errno in *err), it is not
// a regular file (or fstat failed), or it is larger than max_bytes. reason: the words after
// "PATH: WHAT " in open_regular_for_read's message.
struct ReadRefusal {
  enum Kind { kNone, kCannotOpen, kNotRegular, kTooLarge } kind = kNone;
  int err = 0;
  std::string reason;
};

// open_regular_for_read without the throw, for a caller with its own messages: the descriptor,
// or -1 with *why filled.
int try_open_regular_for_read(const std::string& path, size_t max_bytes, size_t* size, ReadRefusal* why);

// An open descriptor of the regular file PATH (O_RDONLY | O_NONBLOCK cleared after the check),
// with its size in *size. Throws SafeFileError naming WHAT: missing, not regular, over max_bytes.
int open_regular_for_read(const std::string& path, size_t max_bytes, const std::string& what, size_t* size);

// The SIZE bytes of FD (from open_regular_for_read), which it closes; a file that grew or shrank
// while read is an error naming PATH and WHAT.
std::string read_open_file(int fd, size_t size, const std::string& path, const std::string& what);

// PATH's whole content: open_regular_for_read, then read exactly its size (a file that grew or
// shrank while read is an error).
std::string read_regular_file(const std::string& path, size_t max_bytes, const std::string& what);

// Why DIR is not safe to write in for this user, or "" when it is (see the top of this file).
// Pure: takes the directory's owner, mode and the caller's uid.
std::string unsafe_dir_reason(unsigned dir_uid, unsigned dir_mode, unsigned caller_uid);

// Throws SafeFileError when DIR does not exist, is not a directory or is unsafe to write in.
void check_write_dir(const std::string& dir, const std::string& what);

// A descriptor of PATH opened for writing, created (mode) or truncated, never through a symlink.
// read_back: opened O_RDWR, for a file the writer reads again.
int create_output_file(const std::string& path, const std::string& what, unsigned mode = 0644, bool read_back = false);

// create_output_file as a stdio stream (fmode "w" or "wb"); throws SafeFileError like it.
std::FILE* create_output_stream(const std::string& path, const std::string& what, const char* fmode = "w");

// A new file PATH (O_EXCL: it must not exist), never through a symlink, for a temporary file
// that is renamed into place when complete.
int create_temp_file(const std::string& path, const std::string& what, unsigned mode = 0644);
