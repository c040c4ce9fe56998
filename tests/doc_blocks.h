// doc_blocks: the shell commands a Markdown page shows, for tests/test_doc_commands.cc. The
// convention (docs/README.md, "Commands in these pages"):
//   ```sh / ```bash   every line is a command (blank lines and # comments skipped); no output shown.
//   ```console        a line starting "$ " is a command; the lines after it, up to the next "$ ",
//                     are its output as shown, and each must be a line the command printed
//                     (stdout and stderr, any order); "..." in a shown line stands for any text,
//                     a line that is only "..." for lines left out.
//   In both, a command ending in "\" goes on on the next line, and a here-document's lines up to
//   its terminator belong to its command.
// A block that cannot run in a test carries, as the last non-blank line before its fence,
//   <!-- not run: REASON -->
// and a console block whose output varies from run to run (timings)
//   <!-- output not checked: REASON -->
// A marker without a reason, a marker not followed by a sh/bash/console block, and a block of
// another language (or none) holding "$ " lines are errors.
#pragma once
#include <cctype>
#include <string>
#include <vector>

namespace docblocks {

struct Command {
  int line = 0;                       // 1-based line of its first line
  std::string text;                   // the command, continuation lines joined by '\n'
  std::vector<std::string> expected;  // console: the output lines shown after it
};

struct Block {
  int line = 0;  // the opening fence's line
  std::string lang;
  std::string not_run;    // the reason, when marked not run
  std::string unchecked;  // the reason, when its output is marked not checked
  std::vector<Command> commands;
};

struct Page {
  std::vector<Block> blocks;        // the sh, bash and console blocks, in order
  std::vector<std::string> errors;  // "LINE: what"
};

inline bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

inline std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

inline bool is_command_lang(const std::string& lang) { return lang == "sh" || lang == "bash" || lang == "console"; }

// "<!-- KIND: REASON -->" -> REASON (may be empty); false when the line is not that marker.
inline bool marker(const std::string& line, const std::string& kind, std::string* reason) {
  const std::string t = trim(line), open = "<!-- " + kind;
  if (!starts_with(t, open) || t.size() < open.size() + 4 || t.compare(t.size() - 3, 3, "-->") != 0) return false;
  std::string rest = t.substr(open.size(), t.size() - 3 - open.size());
  if (!rest.empty() && rest[0] == ':')
    rest = rest.substr(1);
  else if (!rest.empty() && rest[0] != ' ')
    return false;  // "<!-- not running ..." is another comment
  *reason = trim(rest);
  return true;
}

// The word a here-document ends with (<<EOF, <<'EOF', <<"EOF", <<-EOF), or "" when none.
inline std::string heredoc_word(const std::string& line) {
  size_t at = line.find("<<");
  if (at == std::string::npos || line.compare(at, 3, "<<<") == 0) return "";
  size_t i = at + 2;
  if (i < line.size() && line[i] == '-') ++i;
  while (i < line.size() && line[i] == ' ') ++i;
  const bool quoted = i < line.size() && (line[i] == '\'' || line[i] == '"');
  if (quoted) ++i;
  size_t b = i;
  while (i < line.size() && (std::isalnum((unsigned char)line[i]) || line[i] == '_')) ++i;
  return quoted && (i >= line.size() || (line[i] != '\'' && line[i] != '"')) ? "" : line.substr(b, i - b);
}

// Takes one command starting at lines[*i] (its text without the "$ " prompt: first), consuming
// its continuation and here-document lines; *i is left on its last line.
inline std::string take_command(const std::vector<std::string>& lines, size_t* i, size_t end, std::string first) {
  std::string text = first;
  std::string last = first;
  while (!last.empty() && last.back() == '\\' && *i + 1 < end) {
    last = lines[++*i];
    text += "\n" + last;
  }
  const std::string word = heredoc_word(text);
  if (!word.empty()) {
    while (*i + 1 < end) {
      const std::string& l = lines[++*i];
      text += "\n" + l;
      if (trim(l) == word) break;
    }
  }
  return text;
}

inline Page parse_page(const std::string& markdown) {
  Page page;
  const std::vector<std::string> lines = split_lines(markdown);
  auto error = [&](size_t i, const std::string& what) { page.errors.push_back(std::to_string(i + 1) + ": " + what); };
  std::string pending_not_run, pending_unchecked;
  int pending_line = -1;
  bool have_not_run = false, have_unchecked = false;
  auto pending_dangles = [&](size_t i) {
    if (have_not_run || have_unchecked)
      error(size_t(pending_line), "a marker must be the last line before a sh, bash or console block's fence");
    have_not_run = have_unchecked = false;
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::string reason;
    const bool not_run = marker(l, "not run", &reason);
    if (not_run || marker(l, "output not checked", &reason)) {
      if (not_run ? have_not_run : have_unchecked) pending_dangles(i);
      if (reason.empty())
        error(i, "a marker without a reason: write <!-- not run: why --> or <!-- output not checked: why -->");
      (not_run ? pending_not_run : pending_unchecked) = reason;
      (not_run ? have_not_run : have_unchecked) = true;
      pending_line = int(i);
      continue;
    }
    if (!starts_with(l, "```")) {
      if (!trim(l).empty()) pending_dangles(i);
      continue;
    }
    // A fenced block: from here to the closing fence.
    const std::string lang = trim(l.substr(3));
    size_t close = i + 1;
    while (close < lines.size() && !starts_with(lines[close], "```")) ++close;
    if (close == lines.size()) {
      error(i, "a code block that is never closed");
      break;
    }
    if (!is_command_lang(lang)) {
      if (have_not_run || have_unchecked) pending_dangles(i);
      for (size_t k = i + 1; k < close; ++k)
        if (starts_with(lines[k], "$ ")) {
          error(k, "a \"$ \" command in a block that is not ```console (it is ```" + lang + ")");
          break;
        }
      i = close;
      continue;
    }
    Block b;
    b.line = int(i + 1);
    b.lang = lang;
    b.not_run = have_not_run ? pending_not_run : "";
    b.unchecked = have_unchecked ? pending_unchecked : "";
    if (have_not_run && b.not_run.empty()) b.not_run = "(no reason)";
    if (have_unchecked && b.unchecked.empty()) b.unchecked = "(no reason)";
    if (have_unchecked && lang != "console")
      error(size_t(pending_line), "output not checked marks only console blocks");
    have_not_run = have_unchecked = false;
    for (size_t k = i + 1; k < close; ++k) {
      const std::string& c = lines[k];
      if (lang == "console") {
        if (starts_with(c, "$ ")) {
          Command cmd;
          cmd.line = int(k + 1);
          cmd.text = take_command(lines, &k, close, c.substr(2));
          b.commands.push_back(cmd);
        } else if (b.commands.empty()) {
          if (!trim(c).empty()) error(k, "output before the first \"$ \" command of a console block");
        } else if (!trim(c).empty()) {
          b.commands.back().expected.push_back(c);
        }
      } else if (!trim(c).empty() && trim(c)[0] != '#') {
        Command cmd;
        cmd.line = int(k + 1);
        cmd.text = take_command(lines, &k, close, c);
        b.commands.push_back(cmd);
      }
    }
    if (b.commands.empty()) error(i, "a ```" + lang + " block with no command");
    page.blocks.push_back(b);
    i = close;
  }
  pending_dangles(lines.size());
  return page;
}

// A shown output line matches a printed one: "..." stands for any text; trailing blanks ignored.
inline bool shown_line_matches(const std::string& shown, const std::string& printed) {
  const std::string want = trim(shown), got = trim(printed);
  std::vector<std::string> parts;
  size_t pos = 0;
  for (size_t at; (at = want.find("...", pos)) != std::string::npos; pos = at + 3)
    parts.push_back(want.substr(pos, at - pos));
  parts.push_back(want.substr(pos));
  if (parts.size() == 1) return want == got;
  if (!starts_with(got, parts.front())) return false;
  size_t at = parts.front().size();
  for (size_t k = 1; k + 1 < parts.size(); ++k) {
    at = got.find(parts[k], at);
    if (at == std::string::npos) return false;
    at += parts[k].size();
  }
  const std::string& tail = parts.back();
  return got.size() >= at + tail.size() && got.compare(got.size() - tail.size(), tail.size(), tail) == 0;
}

// The shown lines no printed line matches ("..." alone is skipped).
inline std::vector<std::string> unmatched_lines(const std::vector<std::string>& shown, const std::string& printed) {
  const std::vector<std::string> got = split_lines(printed);
  std::vector<std::string> missing;
  for (const std::string& s : shown) {
    if (trim(s) == "...") continue;
    bool found = false;
    for (const std::string& g : got)
      if (shown_line_matches(s, g)) {
        found = true;
        break;
      }
    if (!found) missing.push_back(s);
  }
  return missing;
}

}  // namespace docblocks
