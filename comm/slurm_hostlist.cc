// slurm_hostlist: expanding SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE (see slurm_hostlist.h).
#include "comm/slurm_hostlist.h"
#include "src/shown_text.h"

#include <algorithm>

namespace {

constexpr size_t kMaxDigits = 18;  // fits in unsigned long long with room to add 1

struct Span {
  size_t begin = 0, end = 0;  // [begin, end) in the text
};

struct Range {
  unsigned long long lo = 0, hi = 0;
  size_t width = 0;  // digits of LO as written: every number is padded to it
};

// A piece of an item: literal text, or a bracket group of ranges (text empty).
struct Segment {
  std::string text;
  std::vector<Range> ranges;
  bool group() const { return !ranges.empty(); }
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == '.';
}
std::string at(size_t i) { return " at character " + std::to_string(i + 1); }
size_t decimal_digits(unsigned long long v) {
  size_t n = 1;
  while (v >= 10) v /= 10, ++n;
  return n;
}
std::string padded(unsigned long long v, size_t width) {
  std::string s = std::to_string(v);
  return s.size() >= width ? s : std::string(width - s.size(), '0') + s;
}
// Whole string of at most kMaxDigits decimal digits.
bool parse_digits(const std::string& s, unsigned long long* v) {
  if (s.empty() || s.size() > kMaxDigits) return false;
  *v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    *v = *v * 10 + static_cast<unsigned long long>(c - '0');
  }
  return true;
}
// Pieces of text[span) split on ',' (each with its own span).
std::vector<Span> split_commas(const std::string& text, Span span) {
  std::vector<Span> out;
  size_t start = span.begin;
  for (size_t i = span.begin; i <= span.end; ++i)
    if (i == span.end || text[i] == ',') {
      out.push_back({start, i});
      start = i + 1;
    }
  return out;
}

class HostListParser {
 public:
  HostListParser(const std::string& text, const std::string& what) : text_(text), what_(what) {}

  std::vector<std::string> run() {
    if (text_.empty()) fail("empty host list");
    std::vector<std::vector<Segment>> items;
    size_t total = 0;
    for (const Span& s : top_level_items()) {
      items.push_back(parse_item(s));
      total += count_hosts(items.back(), s);
      if (total > kSlurmMaxHosts) fail("expands to more than " + std::to_string(kSlurmMaxHosts) + " hosts");
    }
    std::vector<std::string> hosts;
    hosts.reserve(total);
    for (const auto& item : items) expand(item, 0, "", &hosts);
    return hosts;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw SlurmListError(slurm_quoted(what_, text_) + ": " + why);
  }
  std::string part(Span s) const { return "'" + shown_text(text_.substr(s.begin, s.end - s.begin)) + "'"; }

  // Items split on the commas outside brackets; brackets balanced and not nested.
  std::vector<Span> top_level_items() const {
    std::vector<Span> items;
    size_t start = 0, open = 0;
    bool inside = false;
    for (size_t i = 0; i <= text_.size(); ++i) {
      const char c = i < text_.size() ? text_[i] : ',';
      if (i < text_.size() && c == '[') {
        if (inside) fail("nested '['" + at(i) + " (the '['" + at(open) + " is not closed)");
        inside = true;
        open = i;
      } else if (i < text_.size() && c == ']') {
        if (!inside) fail("unbalanced ']'" + at(i) + " (no '[' before it)");
        inside = false;
      } else if (c == ',' && !inside) {
        if (i == start) fail("empty host name" + at(i == text_.size() ? i - 1 : i));
        items.push_back({start, i});
        start = i + 1;
      }
    }
    if (inside) fail("unbalanced '['" + at(open) + " (no ']' after it)");
    return items;
  }

  std::vector<Segment> parse_item(Span s) const {
    if (text_[s.begin] == '-') fail("host name " + part(s) + at(s.begin) + " starts with '-'");
    std::vector<Segment> segs;
    size_t i = s.begin;
    while (i < s.end) {
      if (text_[i] == '[') {
        size_t close = text_.find(']', i);  // balanced: within the item
        segs.push_back({"", parse_group({i + 1, close})});
        i = close + 1;
        continue;
      }
      std::string lit;
      for (; i < s.end && text_[i] != '['; ++i) {
        if (!is_name_char(text_[i]))
          fail("character '" + shown_text(std::string(1, text_[i])) + "'" + at(i) +
               " is not allowed in a host name (letters, digits, '-', '_', '.')");
        lit += text_[i];
      }
      segs.push_back({lit, {}});
    }
    return segs;
  }

  std::vector<Range> parse_group(Span g) const {
    std::vector<Range> ranges;
    for (const Span& r : split_commas(text_, g)) ranges.push_back(parse_range(r));
    return ranges;
  }

  Range parse_range(Span r) const {
    if (r.begin == r.end) fail("empty range" + at(r.begin == 0 ? 0 : r.begin - 1) + " (inside '[...]')");
    const std::string s = text_.substr(r.begin, r.end - r.begin);
    const size_t dash = s.find('-');
    const std::string lo = s.substr(0, dash), hi = dash == std::string::npos ? lo : s.substr(dash + 1);
    Range out;
    const bool digits_only = !lo.empty() && !hi.empty() && std::all_of(lo.begin(), lo.end(), is_digit) &&
                             std::all_of(hi.begin(), hi.end(), is_digit);
    if (!digits_only) fail("range " + part(r) + at(r.begin) + " is not a number or LO-HI");
    if (!parse_digits(lo, &out.lo) || !parse_digits(hi, &out.hi))
      fail("range " + part(r) + at(r.begin) + " has a number of more than " + std::to_string(kMaxDigits) + " digits");
    if (out.lo > out.hi) fail("reversed range " + part(r) + at(r.begin) + " (LO must be <= HI)");
    if (out.hi - out.lo >= kSlurmMaxHosts)
      fail("range " + part(r) + at(r.begin) + " expands to more than " + std::to_string(kSlurmMaxHosts) + " hosts");
    out.width = lo.size();
    return out;
  }

  // Hosts the item expands to (the product of its groups' sizes), capped; its longest name is
  // checked against kSlurmMaxHostName before anything is expanded.
  size_t count_hosts(const std::vector<Segment>& item, Span s) const {
    size_t count = 1, longest = 0;
    for (const Segment& seg : item) {
      if (!seg.group()) {
        longest += seg.text.size();
        continue;
      }
      size_t n = 0, widest = 0;
      for (const Range& r : seg.ranges) {
        n += static_cast<size_t>(r.hi - r.lo + 1);
        if (n > kSlurmMaxHosts) break;
        widest = std::max(widest, std::max(r.width, decimal_digits(r.hi)));
      }
      count *= n;
      if (n > kSlurmMaxHosts || count > kSlurmMaxHosts)
        fail(part(s) + at(s.begin) + " expands to more than " + std::to_string(kSlurmMaxHosts) + " hosts");
      longest += widest;
    }
    if (longest > kSlurmMaxHostName)
      fail("host names from " + part(s) + at(s.begin) + " are longer than " + std::to_string(kSlurmMaxHostName) +
           " characters");
    return count;
  }

  // Leftmost group slowest, as Slurm expands "rack[1-2]-n[01-02]".
  void expand(const std::vector<Segment>& item, size_t k, const std::string& prefix,
              std::vector<std::string>* out) const {
    if (k == item.size()) {
      out->push_back(prefix);
      return;
    }
    const Segment& seg = item[k];
    if (!seg.group()) return expand(item, k + 1, prefix + seg.text, out);
    for (const Range& r : seg.ranges)
      for (unsigned long long v = r.lo; v <= r.hi; ++v) expand(item, k + 1, prefix + padded(v, r.width), out);
  }

  const std::string& text_;
  const std::string& what_;
};

}  // namespace

std::string slurm_quoted(const std::string& what, const std::string& text) {
  const size_t kShown = 200;
  return what + "='" + (text.size() > kShown ? shown_text(text.substr(0, kShown)) + "..." : shown_text(text)) + "'";
}

std::vector<std::string> expand_slurm_hostlist(const std::string& text, const std::string& what) {
  return HostListParser(text, what).run();
}

std::vector<int> expand_slurm_tasks_per_node(const std::string& text, const std::string& what) {
  auto fail = [&](const std::string& why) -> void { throw SlurmListError(slurm_quoted(what, text) + ": " + why); };
  if (text.empty()) fail("empty list");
  std::vector<int> out;
  for (const Span& e : split_commas(text, {0, text.size()})) {
    const std::string s = text.substr(e.begin, e.end - e.begin);
    if (s.empty()) fail("empty entry" + at(e.begin == text.size() ? e.begin - 1 : e.begin));
    const size_t paren = s.find('(');
    const std::string count_text = s.substr(0, paren);
    std::string reps_text = "1";
    if (paren != std::string::npos) {
      const bool framed = s.size() > paren + 3 && s.compare(paren, 2, "(x") == 0 && s.back() == ')';
      reps_text = framed ? s.substr(paren + 2, s.size() - paren - 3) : "";
    }
    unsigned long long count = 0, reps = 0;
    if (!parse_digits(count_text, &count) || !parse_digits(reps_text, &reps))
      fail("'" + shown_text(s) + "'" + at(e.begin) + " is not COUNT or COUNT(xREPEAT)");
    if (count == 0) fail("a count of 0 tasks" + at(e.begin));
    if (count > static_cast<unsigned long long>(kSlurmMaxTasksPerNode))
      fail("a count of " + count_text + " tasks" + at(e.begin) + " is more than " +
           std::to_string(kSlurmMaxTasksPerNode));
    if (reps == 0) fail("a repetition of (x0)" + at(e.begin + paren));
    if (reps > kSlurmMaxHosts - out.size()) fail("lists more than " + std::to_string(kSlurmMaxHosts) + " nodes");
    out.insert(out.end(), static_cast<size_t>(reps), static_cast<int>(count));
  }
  return out;
}
