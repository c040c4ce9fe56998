// shown_text: how one-line messages quote user-given text (see shown_text.h).
#include "src/shown_text.h"

std::string shown_text(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
      continue;
    }
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 15];
  }
  return out;
}
