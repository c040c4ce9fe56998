// program_name: the name a program was started as, for its usage lines: "train" in the source
// tree, "baresgd-train" when installed (argv[0]'s last component; glibc keeps it as
// program_invocation_short_name). Header-only: ./report links none of the library.
#pragma once
#include <errno.h>  // program_invocation_short_name (glibc)

#include <algorithm>
#include <string>

// The name this process was started as, or fallback when it has none.
inline std::string invoked_name(const std::string& fallback) {
  const char* n = program_invocation_short_name;
  return n && *n ? std::string(n) : fallback;
}

// usage re-headed with name: "usage: WRITTEN ..." becomes "usage: NAME ...", and the lines that
// continue the synopsis (up to its first blank line) keep lining up under the first flag.
// A text that does not start with "usage: WRITTEN " is returned as it is.
inline std::string with_program_name(const std::string& usage, const std::string& written, const std::string& name) {
  const std::string head = "usage: " + written + " ";
  if (usage.compare(0, head.size(), head) != 0 || name == written) return usage;
  std::string out = "usage: " + name + " ";
  const size_t synopsis_end = std::min(usage.find("\n\n"), usage.size());
  const std::string old_indent(head.size(), ' '), new_indent(out.size(), ' ');
  size_t i = head.size();
  while (i < usage.size()) {
    const size_t nl = usage.find('\n', i);
    const size_t end = nl == std::string::npos ? usage.size() : nl + 1;
    std::string line = usage.substr(i, end - i);
    if (i > head.size() && i < synopsis_end && line.compare(0, old_indent.size(), old_indent) == 0)
      line = new_indent + line.substr(old_indent.size());
    out += line;
    i = end;
  }
  return out;
}
