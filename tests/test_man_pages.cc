// test_man_pages: the man pages in man/ are man pages (every section an admin looks for, the
// installed names, examples for ssh, Slurm, mpirun and torchrun) and describe every flag the
// program's --help prints; --help itself keeps each flag apart from its description and names
// the program as it was started; --version claims only the backends a program links.
// Env: BARESGD_SRC (the source tree), BARESGD_TRAIN, BARESGD_LAUNCH, BARESGD_REPORT (make test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/program_name.h"
#include "tests/test_util.h"

namespace {

using testutil::run;

std::string src_dir() { return testutil::env_or("BARESGD_SRC", "."); }
std::string report_bin() { return testutil::env_or("BARESGD_REPORT", "./report"); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Program {
  const char* name;  // as in the source tree: train, launch, report
  std::string bin;
};
std::vector<Program> programs() {
  return {{"train", testutil::train_bin()}, {"launch", testutil::launch_bin()}, {"report", report_bin()}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// ---- --help's option lines ------------------------------------------------------------------
// An option line is indented by 2 to 9 spaces and starts with '-' (deeper lines continue a
// description). Its flags part runs to the first two spaces; the description follows.
struct OptionLine {
  std::string text, flags_part, description;
};

std::vector<OptionLine> option_lines(const std::string& help) {
  std::vector<OptionLine> out;
  for (const std::string& l : lines_of(help)) {
    const size_t indent = l.find_first_not_of(' ');
    if (indent == std::string::npos || indent < 2 || indent > 9 || l[indent] != '-') continue;
    const size_t gap = l.find("  ", indent);
    OptionLine o{l, l.substr(indent, gap == std::string::npos ? std::string::npos : gap - indent), ""};
    if (gap != std::string::npos) {
      const size_t d = l.find_first_not_of(' ', gap);
      if (d != std::string::npos) o.description = l.substr(d);
    }
    out.push_back(o);
  }
  return out;
}

// "-i," "--ssh-identity-file" "--network-interface(s)": a flag word, without its comma.
bool is_flag_word(const std::string& w) {
  if (w.size() < 2 || w[0] != '-' || w == "--") return false;
  const size_t start = w[1] == '-' ? 2 : 1;
  if (start >= w.size() || !std::isalpha(static_cast<unsigned char>(w[start]))) return false;
  for (size_t i = start; i < w.size(); ++i) {
    const char c = w[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      const std::string rest = w.substr(i);
      return rest == "," || rest == "(s)" || rest == "(s),";
    }
  }
  return true;
}

// The flags an option line names: "--network-interface(s)" is --network-interface and
// --network-interfaces.
std::vector<std::string> flags_of(const OptionLine& o) {
  std::vector<std::string> out;
  for (std::string w : words_of(o.flags_part)) {
    if (!is_flag_word(w)) continue;
    if (w.back() == ',') w.pop_back();
    if (w.size() > 3 && w.compare(w.size() - 3, 3, "(s)") == 0) {
      w.resize(w.size() - 3);
      out.push_back(w + "s");
    }
    out.push_back(w);
  }
  return out;
}

// Why an option line runs its flags into the description, or "" when it does not: the flags
// part holds each flag with at most two value words (FILE, "MIN MAX"), and the description does
// not start with a flag (a reader, and man-page tools, take that for another option).
std::string glued(const OptionLine& o) {
  if (!o.description.empty() && o.description[0] == '-')
    return "its description starts with " + words_of(o.description)[0];
  int values = 0;
  for (const std::string& w : words_of(o.flags_part)) {
    values = is_flag_word(w) ? 0 : values + 1;
    if (values > 2) return "'" + w + "' is run into the flags, with one space";
  }
  return "";
}

std::vector<std::string> help_flags(const std::string& help) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const OptionLine& o : option_lines(help))
    for (const std::string& f : flags_of(o))
      if (seen.insert(f).second) out.push_back(f);
  return out;
}

TEST(HelpText, OptionLineParserFindsFlagsAndGluedLines) {
  const std::string help =
      "usage: x [-a]\n"
      "  -np, --num-proc N         number of ranks\n"
      "      --network-interface(s) IF  bind\n"
      "  -i, --ssh-identity-file F ssh identity file\n"
      "  -x VAR[=VALUE]            --mpi: send VAR\n"
      "      --binding-args \"ARGS\"\n"
      "                            --deep continuation, not an option\n"
      "--dry-run at column 0 is prose\n";
  const auto lines = option_lines(help);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(help_flags(help),
            (std::vector<std::string>{"-np", "--num-proc", "--network-interfaces", "--network-interface", "-i",
                                      "--ssh-identity-file", "-x", "--binding-args"}));
  EXPECT_EQ(glued(lines[0]), "");
  EXPECT_EQ(glued(lines[1]), "");
  EXPECT_EQ(glued(lines[2]), "'identity' is run into the flags, with one space");
  EXPECT_EQ(glued(lines[3]), "its description starts with --mpi:");
  EXPECT_EQ(glued(lines[4]), "");
}

// Every option line of every program's --help keeps its flags apart from the description
// (issue 25: -x, --mpi-args, --binding-args, --output-filename, -i, --no-srun ran together).
TEST(HelpText, EveryOptionLineKeepsItsFlagsApart) {
  for (const Program& p : programs()) {
    auto r = run("'" + p.bin + "' --help");
    ASSERT_EQ(r.status, 0) << p.name << ": " << r.err;
    const auto lines = option_lines(r.out);
    EXPECT_GE(lines.size(), 4u) << p.name << " --help:\n" << r.out;
    for (const OptionLine& o : lines) EXPECT_EQ(glued(o), "") << p.name << " --help: " << o.text;
  }
}

TEST(HelpText, WithProgramNameReheadsTheSynopsis) {
  const std::string usage =
      "usage: train [--a N] [--b]\n"
      "             [--c]\n"
      "\n"
      "             indented prose\n";
  EXPECT_EQ(with_program_name(usage, "train", "baresgd-train"),
            "usage: baresgd-train [--a N] [--b]\n"
            "                     [--c]\n"
            "\n"
            "             indented prose\n");
  EXPECT_EQ(with_program_name(usage, "train", "train"), usage);
  EXPECT_EQ(with_program_name("other text\n", "train", "baresgd-train"), "other text\n");
  EXPECT_EQ(with_program_name("usage: launch -np N\n", "launch", "bl"), "usage: bl -np N\n");
}

// Installed under another name (baresgd-train), --help's usage line says that name, and a usage
// error's synopsis too (issue 25: `usage: train` under baresgd-train).
TEST(HelpText, UsageLineNamesTheProgramAsStarted) {
  const std::string d = testutil::make_temp_dir("help-name");
  for (const Program& p : programs()) {
    const std::string installed = d + "/baresgd-" + p.name;
    char* real = ::realpath(p.bin.c_str(), nullptr);
    ASSERT_NE(real, nullptr) << p.bin;
    ASSERT_EQ(::symlink(real, installed.c_str()), 0) << installed;
    std::free(real);
    auto r = run("'" + installed + "' --help");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string head = "usage: baresgd-" + std::string(p.name) + " ";
    EXPECT_EQ(r.out.compare(0, head.size(), head), 0) << r.out.substr(0, 200);
    EXPECT_FALSE(has(r.out, std::string("usage: ") + p.name + " ")) << r.out.substr(0, 200);
  }
  auto bad = run("'" + d + "/baresgd-train' --epochs two");
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(has(bad.err, "usage: baresgd-train [--batch-size N]")) << bad.err;
  EXPECT_TRUE(has(bad.err, "\n                     [--momentum M]")) << bad.err;  // still lined up
  bad = run("'" + d + "/baresgd-launch' -np 2 --gloo --bogus true");
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(has(bad.err, "usage: baresgd-launch -np N")) << bad.err;
  run("rm -rf '" + d + "'");
}

// ---- --version ------------------------------------------------------------------------------
// What ldd says a program links, and which backends its --version names.
bool links(const std::string& bin, const std::string& lib) {
  return run("readelf -d '" + bin + "' | grep -q 'NEEDED.*\\[" + lib + "'").status == 0;
}

// ./report links no backend, so its --version names none (issue 25: it claimed "gloo mpi");
// ./train names exactly the backends it links.
TEST(VersionText, NamesOnlyTheBackendsAProgramLinks) {
  auto r = run("'" + report_bin() + "' --version");
  ASSERT_EQ(r.status, 0);
  EXPECT_FALSE(links(report_bin(), "libgloo") || links(report_bin(), "libmpi")) << "report links a backend now";
  EXPECT_FALSE(has(r.out, "backends:")) << r.out;
  EXPECT_TRUE(has(r.out, "\nbuilt for: ")) << r.out;
  auto t = run("'" + testutil::train_bin() + "' --version");
  ASSERT_EQ(t.status, 0);
  std::string backends;
  for (const std::string& l : lines_of(t.out))
    if (l.compare(0, 10, "backends: ") == 0) backends = l.substr(10);
  ASSERT_FALSE(backends.empty()) << t.out;
  const auto named = words_of(backends);
  auto names = [&](const std::string& b) { return std::find(named.begin(), named.end(), b) != named.end(); };
  EXPECT_EQ(names("gloo"), links(testutil::train_bin(), "libgloo")) << t.out;
  EXPECT_EQ(names("mpi"), links(testutil::train_bin(), "libmpi")) << t.out;
  // One fact a line: the version, the backends, the CPU.
  for (const std::string& l : lines_of(t.out)) EXPECT_FALSE(has(l, "backends:") && has(l, "built for:")) << l;
}

// ---- the man pages --------------------------------------------------------------------------
struct Rendered {
  int status = -1;
  std::string text, warnings;
};

// The page as man shows it, in plain ASCII, wide, without hyphenation; a line broken after a
// hyphen is joined again so that no flag is split.
Rendered render(const std::string& page) {
  auto r = run("LC_ALL=C MANWIDTH=250 man --warnings --no-hyphenation --no-justification -l '" + page + "'");
  Rendered out{r.status, "", r.err};
  for (const std::string& l : lines_of(r.out)) {
    if (out.text.size() >= 3 && out.text[out.text.size() - 2] == '-' &&
        std::isalpha(static_cast<unsigned char>(out.text[out.text.size() - 3]))) {
      out.text.pop_back();  // the newline after "word-"
      const size_t word = l.find_first_not_of(' ');
      out.text += (word == std::string::npos ? "" : l.substr(word)) + "\n";
      continue;
    }
    out.text += l + "\n";
  }
  return out;
}

// The text of one section: from its heading (a line of its own at column 0) to the next.
std::string section(const std::string& text, const std::string& name) {
  std::string out;
  bool in = false;
  for (const std::string& l : lines_of(text)) {
    const bool heading = !l.empty() && l[0] != ' ';
    if (heading)
      in = l == name;
    else if (in)
      out += l + "\n";
  }
  return out;
}

// flag as a word of text: not a prefix of a longer flag (--mpi in --mpi-args).
bool mentions_flag(const std::string& text, const std::string& flag) {
  for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    const bool start_ok = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '-');
    const size_t end = at + flag.size();
    const bool end_ok = end == text.size() ||
                        !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-' || text[end] == '_');
    if (start_ok && end_ok) return true;
  }
  return false;
}

std::string page_of(const Program& p) { return src_dir() + "/man/baresgd-" + p.name + ".1.in"; }

TEST(ManPages, HaveTheSectionsOfAManPage) {
  const char* const kSections[] = {"NAME",        "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT",
                                   "EXIT STATUS", "FILES",    "EXAMPLES",    "SEE ALSO"};
  for (const Program& p : programs()) {
    const std::string page = page_of(p);
    const Rendered r = render(page);
    ASSERT_EQ(r.status, 0) << page << ": " << r.warnings;
    EXPECT_EQ(r.warnings, "") << page;  // groff's warnings: an unknown macro, a bad escape
    for (const char* s : kSections) EXPECT_NE(section(r.text, s), "") << page << " has no " << s << " section";
    const std::string installed = std::string("baresgd-") + p.name;
    EXPECT_TRUE(has(section(r.text, "NAME"), installed + " - ")) << page;
    EXPECT_TRUE(has(section(r.text, "SYNOPSIS"), installed + " ")) << page;
    EXPECT_FALSE(has(r.text, "usage:")) << page << ": a --help dump";
    for (const std::string& l : lines_of(r.text))
      EXPECT_FALSE(has(l, "backends:") && has(l, "built for:")) << page << ": " << l;
  }
}

// The pages of the programs that start ranks show each way to start them.
TEST(ManPages, ExamplesStartRanksOverSshSlurmMpirunAndTorchrun) {
  for (const Program& p : programs()) {
    if (std::string(p.name) == "report") continue;
    const std::string examples = section(render(page_of(p)).text, "EXAMPLES");
    EXPECT_TRUE(has(examples, "-H hpc01:2,hpc03:2")) << page_of(p) << ": no ssh hosts example";
    EXPECT_TRUE(has(examples, "srun ") || has(examples, "sbatch")) << page_of(p) << ": no Slurm example";
    EXPECT_TRUE(has(examples, "mpirun ") || has(examples, "--mpi")) << page_of(p) << ": no mpirun example";
    EXPECT_TRUE(has(examples, "torchrun ")) << page_of(p) << ": no torchrun example";
  }
}

// Every flag --help prints is described in the page (a flag added to --help fails this until
// the page describes it, and the failure names both).
TEST(ManPages, DescribeEveryFlagOfHelp) {
  for (const Program& p : programs()) {
    auto h = run("'" + p.bin + "' --help");
    ASSERT_EQ(h.status, 0) << p.name << ": " << h.err;
    const auto flags = help_flags(h.out);
    EXPECT_GT(flags.size(), 5u) << p.name << " --help:\n" << h.out;
    const std::string page = page_of(p);
    const Rendered r = render(page);
    ASSERT_EQ(r.status, 0) << page << ": " << r.warnings;
    std::string missing;
    for (const std::string& f : flags)
      if (!mentions_flag(r.text, f)) missing += " " + f;
    EXPECT_EQ(missing, "") << page << " does not describe these flags of " << p.name << " --help:" << missing;
  }
}

}  // namespace
