// test_doc_commands: every shell command README.md and docs/*.md show runs, and the output a page
// shows is what the command prints. tests/doc_blocks.h extracts the ```sh, ```bash and ```console
// blocks (the convention is in docs/README.md); each page's commands run in order in one bash,
// in a scratch directory laid out as the repository root (./train, ./launch, ./report,
// ./reference, data/, tests/), with the suite's environment plus the test hosts of
// tests/test_hosts.sh (BARESGD_SSH_CONFIG, and IH, the directory docs/internals.md keeps its files
// in). A failing command fails the test with its page, line and output, and the page's later
// commands are not run; a shown line no printed line matches fails it too. Blocks marked
// <!-- not run: REASON --> are counted and listed with their reasons.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/doc_blocks.h"
#include "tests/test_hosts_fixture.h"
#include "tests/test_util.h"

namespace {

using docblocks::Block;
using docblocks::Command;
using docblocks::Page;
using testutil::read_file;
using testutil::write_file;

std::string src_dir() { return testutil::env_or("BARESGD_SRC", "."); }
std::string reference_bin() { return testutil::env_or("BARESGD_REFERENCE", src_dir() + "/reference"); }
bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// README.md, then docs/*.md in name order.
std::vector<std::string> doc_pages() {
  std::vector<std::string> pages = {"README.md"};
  auto r = testutil::run("cd '" + src_dir() + "' && ls docs/*.md");
  for (const std::string& p : docblocks::split_lines(r.out))
    if (!p.empty()) pages.push_back(p);
  return pages;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// What one page's run found.
struct PageRun {
  int ran = 0, not_run = 0, checked_lines = 0;
  std::vector<std::string> marked;    // "PAGE:LINE: reason"
  std::vector<std::string> failures;  // one message per failing command
  double seconds = 0;
  std::string kept_dir;  // the scratch directory, kept when something failed
};

// The scratch directory a page runs in: the repository root's layout, its binaries the suite's.
std::string make_scratch() {
  const std::string d = testutil::make_temp_dir("doc-commands");
  const std::string links[][2] = {{testutil::train_bin(), "train"},
                                  {testutil::launch_bin(), "launch"},
                                  {testutil::env_or("BARESGD_REPORT", "./report"), "report"},
                                  {reference_bin(), "reference"},
                                  {src_dir() + "/data", "data"},
                                  {src_dir() + "/tests", "tests"}};
  for (const auto& l : links) {
    char* real = ::realpath(l[0].c_str(), nullptr);  // null when missing: the link dangles, the command says so
    testutil::run("ln -s " + quoted(real ? real : l[0]) + " " + quoted(d + "/" + l[1]));
    std::free(real);
  }
  return d;
}

// One command to run, with the block it stands in.
struct Item {
  const Block* block;
  const Command* cmd;
};

// The page's commands in order, leaving out the blocks marked not run (counted in res).
std::vector<Item> runnable(const std::string& name, const Page& page, PageRun* res) {
  std::vector<Item> items;
  for (const Block& b : page.blocks) {
    if (!b.not_run.empty()) {
      ++res->not_run;
      res->marked.push_back(name + ":" + std::to_string(b.line) + ": " + b.not_run);
      continue;
    }
    for (const Command& c : b.commands) items.push_back({&b, &c});
  }
  return items;
}

// One bash script for the page: command n's output goes to OUT/n.out, its status to OUT/n.rc, and
// the script stops after the first command that fails.
std::string page_script(const std::string& name, const std::vector<Item>& items, const std::string& dir,
                        const std::string& out) {
  std::string script = "cd " + quoted(dir) + " || exit 99\n";
  for (size_t n = 0; n < items.size(); ++n) {
    const std::string id = quoted(out + "/" + std::to_string(n));
    script += "# " + name + ":" + std::to_string(items[n].cmd->line) + "\n{\n" + items[n].cmd->text + "\n} > " + id +
              ".out 2>&1 < /dev/null\nBARESGD_DOC_STATUS=$?\necho $BARESGD_DOC_STATUS > " + id +
              ".rc\n[ $BARESGD_DOC_STATUS -eq 0 ] || exit 0\n";
  }
  return script;
}

// Command n's status and output against what the page shows; false when the page's run ended there.
bool check_command(const std::string& name, const Item& item, const std::string& id, const testutil::RunAll& all,
                   PageRun* res) {
  const Command& c = *item.cmd;
  const std::string where = name + ":" + std::to_string(c.line);
  const std::string printed = read_file(id + ".out");
  if (!exists(id + ".rc")) {
    res->failures.push_back(where + ": never finished (" +
                            (all.timed_out ? "the page's 900 s ran out" : "the page's bash stopped") + "): " + c.text +
                            "\n--- its output:\n" + printed + "--- bash's stderr:\n" + all.procs[0].err);
    return false;
  }
  ++res->ran;
  const std::string status = docblocks::trim(read_file(id + ".rc"));
  if (status != "0") {
    res->failures.push_back(where + ": exited " + status + ": " + c.text + "\n--- its output:\n" + printed);
    return false;
  }
  if (item.block->lang != "console" || !item.block->unchecked.empty()) return true;
  res->checked_lines += int(c.expected.size());
  const std::vector<std::string> missing = docblocks::unmatched_lines(c.expected, printed);
  if (missing.empty()) return true;
  std::string m = where + ": " + std::to_string(missing.size()) +
                  " shown line(s) the command did not print: " + c.text + "\n--- shown, not printed:\n";
  for (const std::string& line : missing) m += line + "\n";
  res->failures.push_back(m + "--- printed:\n" + printed);
  return true;
}

// Runs a page's commands that are not marked, in order, in one bash in a scratch directory, with
// the test hosts; checks each one's status and, in console blocks not marked otherwise, its shown
// output. The scratch directory stays when something failed (named in the failures).
PageRun run_page(const std::string& name, const std::string& markdown, const std::string& hosts_dir,
                 const std::string& ssh_config) {
  PageRun res;
  const Page page = docblocks::parse_page(markdown);
  for (const std::string& e : page.errors) res.failures.push_back(name + ":" + e);
  const std::vector<Item> items = runnable(name, page, &res);
  if (items.empty()) return res;
  const std::string scratch = make_scratch(), out = scratch + "/.doc-commands";
  testutil::run("mkdir -p " + quoted(out));
  write_file(out + "/script.sh", page_script(name, items, scratch, out));
  std::vector<std::string> env = testutil::current_environment();
  // One sgemm kernel for every machine: OpenBLAS picks its kernel by CPU (SkylakeX on AVX-512,
  // Haswell on AVX2), and each sums some gradients in its own order, so checksums and the last
  // digits of losses differ. Haswell's runs on every CPU baresgd runs on (x86-64-v3), so the
  // pages show its outputs and the test pins it (docs/README.md says so).
  // Likewise baresgd's own conv kernels: AVX2's, which every such CPU runs (kernels/convpool.cc).
  env.erase(std::remove_if(env.begin(), env.end(),
                           [](const std::string& e) {
                             return e.rfind("OPENBLAS_CORETYPE=", 0) == 0 || e.rfind("BARESGD_CONV_KERNELS=", 0) == 0;
                           }),
            env.end());
  env.push_back("OPENBLAS_CORETYPE=Haswell");
  env.push_back("BARESGD_CONV_KERNELS=avx2");
  env.push_back("BARESGD_SSH_CONFIG=" + ssh_config);
  env.push_back("IH=" + hosts_dir);
  const testutil::RunAll all = testutil::run_processes({{{"/bin/bash", out + "/script.sh"}, env}}, 900);
  res.seconds = all.seconds;
  for (size_t n = 0; n < items.size(); ++n)
    if (!check_command(name, items[n], out + "/" + std::to_string(n), all, &res)) break;
  if (res.failures.empty()) {
    testutil::run("rm -rf " + quoted(scratch));
  } else {
    res.kept_dir = scratch;
    res.failures.push_back(name + ": the commands ran in " + scratch + " (kept)");
  }
  return res;
}

void report(const std::string& page, const PageRun& r) {
  std::printf(
      "DocCommands: %s: %d command(s) ran (%d shown output line(s) checked) in %.1f s; %d block(s) marked not run\n",
      page.c_str(), r.ran, r.checked_lines, r.seconds, r.not_run);
  for (const std::string& m : r.marked) std::printf("  not run: %s\n", m.c_str());
  std::fflush(stdout);
}

class DocCommands : public TestHostsFixture<> {
 protected:
  // What a page's commands need beyond the build: ./reference, and jq (.ci/install-deps installs
  // it); named once, before the page runs, rather than as a command's "not found".
  static void expect_what_commands_need(const std::string& page, const Page& parsed) {
    const bool have_jq = testutil::run("command -v jq").status == 0;
    for (const Block& b : parsed.blocks) {
      if (!b.not_run.empty()) continue;
      for (const Command& c : b.commands) {
        const std::string where = page + ":" + std::to_string(c.line);
        if (contains(c.text, "./reference")) {
          EXPECT_TRUE(exists(reference_bin())) << where << " runs ./reference, and " << reference_bin()
                                               << " does not exist (make builds it; BARESGD_REFERENCE names it)";
        }
        if (contains(c.text, "jq ")) {
          EXPECT_TRUE(have_jq) << where << " runs jq, which is not installed (apt-get install jq)";
        }
      }
    }
  }
  void run_and_check(const std::string& page) {
    const std::string markdown = read_file(src_dir() + "/" + page);
    ASSERT_FALSE(markdown.empty()) << "no " << src_dir() << "/" << page << " (make test sets BARESGD_SRC)";
    expect_what_commands_need(page, docblocks::parse_page(markdown));
    const PageRun r = run_page(page, markdown, hosts_dir(), cfg());
    report(page, r);
    for (const std::string& f : r.failures) ADD_FAILURE() << f;
  }
};

// ---- the convention itself ------------------------------------------------------------------

TEST_F(DocCommands, BlocksMarkersAndShownOutputAreReadAsDocumented) {
  const Page p = docblocks::parse_page(
      "text\n"
      "```sh\n"
      "# a comment\n"
      "./train --epochs 1 \\\n"
      "  --seed 1\n"
      "\n"
      "cat > f <<'EOF'\n"
      "a line\n"
      "EOF\n"
      "```\n"
      "<!-- not run: needs a real Slurm cluster -->\n"
      "```console\n"
      "$ sbatch job.sh\n"
      "Submitted batch job 7\n"
      "```\n"
      "<!-- output not checked: timings -->\n"
      "\n"
      "```console\n"
      "$ ./launch -np 2 ./train\n"
      "[0]<stdout>:...\n"
      "$ echo hi\n"
      "```\n"
      "```json\n"
      "{\"$ not\": 1}\n"
      "```\n");
  EXPECT_TRUE(p.errors.empty()) << p.errors[0];
  ASSERT_EQ(p.blocks.size(), 3u);
  ASSERT_EQ(p.blocks[0].commands.size(), 2u);
  EXPECT_EQ(p.blocks[0].commands[0].text, "./train --epochs 1 \\\n  --seed 1");
  EXPECT_EQ(p.blocks[0].commands[0].line, 4);
  EXPECT_EQ(p.blocks[0].commands[1].text, "cat > f <<'EOF'\na line\nEOF");
  EXPECT_EQ(p.blocks[1].not_run, "needs a real Slurm cluster");
  EXPECT_EQ(p.blocks[1].commands[0].expected, std::vector<std::string>{"Submitted batch job 7"});
  EXPECT_EQ(p.blocks[2].unchecked, "timings");
  EXPECT_EQ(p.blocks[2].commands.size(), 2u);
  EXPECT_EQ(p.blocks[2].commands[0].expected, std::vector<std::string>{"[0]<stdout>:..."});

  // Each rule's violation is an error naming its line.
  auto first_error = [](const std::string& md) {
    const Page q = docblocks::parse_page(md);
    return q.errors.empty() ? std::string() : q.errors[0];
  };
  EXPECT_TRUE(contains(first_error("<!-- not run: -->\n```sh\ntrue\n```\n"), "1: a marker without a reason"));
  EXPECT_TRUE(contains(first_error("<!-- not run -->\n```sh\ntrue\n```\n"), "1: a marker without a reason"));
  EXPECT_TRUE(contains(first_error("<!-- not run: why -->\nprose\n```sh\ntrue\n```\n"), "1: a marker must be"));
  EXPECT_TRUE(contains(first_error("<!-- not run: why -->\n```json\n{}\n```\n"), "1: a marker must be"));
  EXPECT_TRUE(contains(first_error("x\n<!-- not run: why -->\n"), "2: a marker must be"));
  EXPECT_TRUE(contains(first_error("```\n$ ./train\n```\n"), "2: a \"$ \" command in a block that is not"));
  EXPECT_TRUE(contains(first_error("```console\nout\n$ true\n```\n"), "2: output before the first"));
  EXPECT_TRUE(contains(first_error("<!-- output not checked: t -->\n```sh\ntrue\n```\n"), "only console"));
  EXPECT_TRUE(contains(first_error("```sh\ntrue\n"), "never closed"));
}

TEST_F(DocCommands, ShownLinesMatchPrintedLinesWithEllipses) {
  using docblocks::shown_line_matches;
  EXPECT_TRUE(shown_line_matches("[0]<stdout>:Train Epoch: 1", "[0]<stdout>:Train Epoch: 1  "));
  EXPECT_FALSE(shown_line_matches("[0]<stdout>:Train Epoch: 1", "[0]<stdout>:Train Epoch: 12"));
  EXPECT_TRUE(shown_line_matches("conv1.weight | 8.4e-02 ...", "conv1.weight | 8.4e-02 +0.78 1500"));
  EXPECT_TRUE(shown_line_matches("ssh ... -T hpc03 '...'", "ssh -o X -F c -T hpc03 'cd /a && exec b'"));
  EXPECT_FALSE(shown_line_matches("ssh ... -T hpc03 '...'", "ssh -o X -F c -T hpc01 'cd /a && exec b'"));
  EXPECT_FALSE(shown_line_matches("a ... b", "a b"));  // the parts may not overlap
  EXPECT_EQ(docblocks::unmatched_lines({"...", "x ...", "y"}, "x 1\nz\n"), std::vector<std::string>{"y"});
}

TEST_F(DocCommands, AFailingCommandOrAShownLineNotPrintedFailsThePage) {
  const PageRun r = run_page("t.md",
                             "```console\n"
                             "$ echo one; echo two >&2\n"
                             "two\n"
                             "o...\n"
                             "$ echo three\n"
                             "four\n"
                             "$ X=5\n"
                             "```\n"
                             "```sh\n"
                             "[ \"$X\" = 5 ] && test -x ./train && test -d data\n"
                             "false\n"
                             "echo never > never.txt\n"
                             "```\n"
                             "<!-- not run: a reason -->\n"
                             "```sh\n"
                             "false\n"
                             "```\n",
                             hosts_dir(), cfg());
  EXPECT_EQ(r.ran, 5);  // the fifth is `false`; the sixth never runs
  EXPECT_EQ(r.not_run, 1);
  EXPECT_EQ(r.marked, std::vector<std::string>{"t.md:15: a reason"});
  ASSERT_EQ(r.failures.size(), 3u);
  EXPECT_TRUE(contains(r.failures[0],
                       "t.md:5: 1 shown line(s) the command did not print: echo three\n"
                       "--- shown, not printed:\nfour\n--- printed:\nthree\n"))
      << r.failures[0];
  EXPECT_TRUE(contains(r.failures[1], "t.md:11: exited 1: false")) << r.failures[1];
  EXPECT_TRUE(contains(r.failures[2], "t.md: the commands ran in ")) << r.failures[2];
  EXPECT_FALSE(exists(r.kept_dir + "/never.txt"));
  testutil::run("rm -rf " + quoted(r.kept_dir));
}

// ---- the pages --------------------------------------------------------------------------------

TEST_F(DocCommands, ReadmeCommandsRun) { run_and_check("README.md"); }

// README's requeue recipe is docs/deploy.md's, byte for byte: the Slurm test runs that one.
TEST_F(DocCommands, ReadmeRequeueRecipeIsDeploysTestedOne) {
  const std::string readme = read_file(src_dir() + "/README.md"), deploy = read_file(src_dir() + "/docs/deploy.md");
  const size_t at = readme.find("#SBATCH --signal=B:USR1@");
  ASSERT_NE(at, std::string::npos) << "README.md shows no job script with --signal=B:USR1@N";
  const size_t open = readme.rfind("```sh\n", at), close = readme.find("```", at);
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, std::string::npos);
  const std::string script = readme.substr(open, close - open);
  EXPECT_NE(script.find("#SBATCH --requeue"), std::string::npos) << script;
  EXPECT_NE(script.find("--resume"), std::string::npos) << script;
  EXPECT_NE(deploy.find(script), std::string::npos) << "README.md's requeue script is not docs/deploy.md's:\n"
                                                    << script;
}

TEST_F(DocCommands, InternalsCommandsRun) { run_and_check("docs/internals.md"); }

TEST_F(DocCommands, EveryOtherDocsPageCommandsRun) {
  for (const std::string& page : doc_pages())
    if (page != "README.md" && page != "docs/internals.md") run_and_check(page);
}

}  // namespace
