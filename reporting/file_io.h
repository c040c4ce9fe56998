// file_io: the report's thin I/O shells: read a whole input file, write the output file. Errors
// come back as one line naming the file: "cannot read PATH: reason", "cannot write PATH: reason".
#pragma once
#include <cstddef>
#include <string>

// Reads all of path into out. False with error set when it cannot be opened or read, is a
// directory, or holds more than max_bytes.
bool read_whole_file(const std::string& path, size_t max_bytes, std::string& out, std::string& error);

// Writes bytes to path (created or truncated). False with error set on any failure.
bool write_whole_file(const std::string& path, const std::string& bytes, std::string& error);
