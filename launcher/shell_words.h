// shell_words: splitting a string into words as a POSIX shell would (pure), for --mpi-args, and
// the shell's rule for variable names, for -x.
#pragma once
#include <string>
#include <vector>

// Words separated by blanks (space, tab, newline); '...' keeps everything literally, "..." keeps
// everything but lets \ escape " \ $ ` and newline; a \ outside quotes escapes the next character.
// No expansion ($VAR, globs, ~) is done. Returns false with a one-line *why (naming the unclosed
// quote or trailing backslash and its column) on bad quoting.
bool split_shell_words(const std::string& s, std::vector<std::string>* words, std::string* why);

// A shell variable name: a letter or _, then letters, digits and _ (what -x and export accept).
bool is_shell_identifier(const std::string& name);
