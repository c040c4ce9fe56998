// shown_text: how one-line messages (launcher, rank discovery) quote user-given text.
#pragma once

#include <string>

// s as a message shows it: printable ASCII as itself, every other byte as \xNN, so a host
// name, address or directory with a newline in it cannot split a message into two lines.
std::string shown_text(const std::string& s);
