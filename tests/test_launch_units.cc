// test_launch_units: ./launch's pure parts, without starting a process: host lists and rank
// layout, line splitting and output tags, the agent protocol, the flags and the environment they
// set, mpirun command lines and shell words. The end-to-end tests are in test_launch_local.cc,
// test_launch_dry_run.cc, test_launch_agent.cc, test_launch_remote.cc and test_launch_liveness.cc.
#include <gtest/gtest.h>

#include "launcher/output.h"
#include "tests/launch_harness.h"
#include "tests/launch_usage.h"

using namespace launchharness;  // NOLINT: the harness is these files' vocabulary

// ============================================================================================
// Unit: hosts
// ============================================================================================

TEST(LaunchHosts, ParsesHostList) {
  auto h = parse_host_list("hpc01:2,hpc03,10.0.0.5:4");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "hpc01");
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[1].name, "hpc03");
  EXPECT_EQ(h[1].slots, 1);
  EXPECT_EQ(h[2].name, "10.0.0.5");
  EXPECT_EQ(h[2].slots, 4);
}

TEST(LaunchHosts, RejectsBadHostLists) {
  const char* bad[] = {"",      ",",    "a,,b",    "a,",  ",a",        "a:",    "a:0",   "a:-1",
                       "a:x",   ":2",   "a:2,a:1", "a,a", "-oProxy=x", "a b:2", "a:2:3", "a:99999999999",
                       "a:1.5", "a:+2", "a;b",     "a:2 "};
  for (const char* s : bad) {
    EXPECT_THROW(parse_host_list(s), HostError) << "'" << s << "'";
  }
  try {
    parse_host_list("hpc01:2,hpc01:1");
    FAIL();
  } catch (const HostError& e) {
    EXPECT_TRUE(contains(e.what(), "hpc01")) << e.what();
    EXPECT_TRUE(contains(e.what(), "twice")) << e.what();
  }
  try {
    parse_host_list("hpc01:0");
    FAIL();
  } catch (const HostError& e) {
    EXPECT_TRUE(contains(e.what(), "slot")) << e.what();
  }
}

TEST(LaunchHosts, ParsesHostfile) {
  auto h = parse_hostfile_text("# cluster\n\nhpc01 slots=2\n  hpc03   slots=4   # big one\nhpc05\n\t\n", "hf");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "hpc01");
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[1].name, "hpc03");
  EXPECT_EQ(h[1].slots, 4);
  EXPECT_EQ(h[2].name, "hpc05");
  EXPECT_EQ(h[2].slots, 1);
  // CRLF files work too.
  auto w = parse_hostfile_text("a slots=2\r\nb slots=1\r\n", "hf");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].slots, 2);
}

TEST(LaunchHosts, HostfileErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* where;
  } cases[] = {
      {"a slots=0\n", "hf:1"},  {"a slots=x\n", "hf:1"},       {"ok slots=1\na slots\n", "hf:2"},
      {"a foo=2\n", "hf:1"},    {"a slots=2 extra\n", "hf:1"}, {"a slots=1\n\na slots=2\n", "hf:3"},
      {"-a slots=1\n", "hf:1"}, {"a slots=-3\n", "hf:1"},      {"a slots=\n", "hf:1"},
      {"a:2\n", "hf:1"},        {"a max_slots=2\n", "hf:1"},
  };
  for (const auto& c : cases) {
    try {
      parse_hostfile_text(c.text, "hf");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const HostError& e) {
      EXPECT_TRUE(contains(e.what(), c.where)) << c.text << " -> " << e.what();
    }
  }
  EXPECT_THROW(parse_hostfile_text("# nothing\n\n", "hf"), HostError);
  try {
    read_hostfile("/nonexistent/hostfile");
    FAIL();
  } catch (const HostError& e) {
    EXPECT_TRUE(contains(e.what(), "/nonexistent/hostfile")) << e.what();
  }
}

TEST(LaunchHosts, LayoutTwoByTwo) {
  auto l = layout_ranks(parse_host_list("hpc01:2,hpc03:2"), 4);
  ASSERT_EQ(l.size(), 4u);
  struct {
    const char* host;
    int local, lsize, cross, csize;
  } want[] = {{"hpc01", 0, 2, 0, 2}, {"hpc01", 1, 2, 0, 2}, {"hpc03", 0, 2, 1, 2}, {"hpc03", 1, 2, 1, 2}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(l[r].rank, r);
    EXPECT_EQ(l[r].size, 4);
    EXPECT_EQ(l[r].host, want[r].host);
    EXPECT_EQ(l[r].local_rank, want[r].local);
    EXPECT_EQ(l[r].local_size, want[r].lsize);
    EXPECT_EQ(l[r].cross_rank, want[r].cross);
    EXPECT_EQ(l[r].cross_size, want[r].csize);
  }
}

TEST(LaunchHosts, LayoutUneven) {
  // a:3, b:1, c:2 -> ranks 0-2 on a, 3 on b, 4-5 on c.
  auto l = layout_ranks(parse_host_list("a:3,b:1,c:2"), 6);
  ASSERT_EQ(l.size(), 6u);
  int want_local[] = {0, 1, 2, 0, 0, 1};
  int want_lsize[] = {3, 3, 3, 1, 2, 2};
  int want_cross[] = {0, 0, 0, 1, 2, 1};  // local 0: a,b,c; local 1: a,c; local 2: a
  int want_csize[] = {3, 2, 1, 3, 3, 2};
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(l[r].local_rank, want_local[r]) << r;
    EXPECT_EQ(l[r].local_size, want_lsize[r]) << r;
    EXPECT_EQ(l[r].cross_rank, want_cross[r]) << r;
    EXPECT_EQ(l[r].cross_size, want_csize[r]) << r;
  }
  // Fewer ranks than slots: hosts fill in order, never more than np ranks, unused hosts dropped.
  auto p = layout_ranks(parse_host_list("a:3,b:1,c:2"), 4);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[3].host, "b");
  EXPECT_EQ(p[3].cross_rank, 1);
  EXPECT_EQ(p[3].cross_size, 2);
  EXPECT_EQ(p[0].cross_size, 2);
  EXPECT_EQ(p[1].cross_size, 1);
  auto used = used_hosts(p);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0].slots, 3);
  EXPECT_EQ(used[1].slots, 1);
  auto one = layout_ranks(parse_host_list("a:8"), 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].local_size, 1);
  EXPECT_EQ(one[0].cross_size, 1);
}

TEST(LaunchHosts, LayoutRejectsTooManyRanks) {
  try {
    layout_ranks(parse_host_list("a:2,b:1"), 4);
    FAIL();
  } catch (const HostError& e) {
    EXPECT_TRUE(contains(e.what(), "-np 4")) << e.what();
    EXPECT_TRUE(contains(e.what(), "3 slots")) << e.what();
  }
  EXPECT_THROW(layout_ranks(parse_host_list("a:2"), 0), HostError);
}

TEST(LaunchHosts, LocalHostNames) {
  EXPECT_TRUE(is_local_host_name("localhost", "vm"));
  EXPECT_TRUE(is_local_host_name("127.0.0.1", "vm"));
  EXPECT_TRUE(is_local_host_name("vm", "vm"));
  EXPECT_TRUE(is_local_host_name("node7", "node7.cluster.example"));
  EXPECT_FALSE(is_local_host_name("hpc01", "vm"));
  EXPECT_FALSE(is_local_host_name("127.0.0.13", "vm"));
}

// ============================================================================================
// Unit: tags and line splitting
// ============================================================================================

TEST(LaunchTagger, TagFormats) {
  EXPECT_EQ(make_tag(TagFormat::kHorovod, 0, Stream::kStdout, "h"), "[0]<stdout>:");
  EXPECT_EQ(make_tag(TagFormat::kHorovod, 12, Stream::kStderr, "h"), "[12]<stderr>:");
  EXPECT_EQ(make_tag(TagFormat::kMpi, 0, Stream::kStdout, "h"), "[1,0]<stdout>:");
  EXPECT_EQ(make_tag(TagFormat::kMpi, 3, Stream::kStderr, "h"), "[1,3]<stderr>:");
  EXPECT_EQ(make_tag(TagFormat::kShort, 2, Stream::kStdout, "h"), "[2]:");
  EXPECT_EQ(make_tag(TagFormat::kShort, 2, Stream::kStderr, "h"), "[2]:");
  EXPECT_EQ(make_tag(TagFormat::kHost, 0, Stream::kStdout, "hpc01"), "[hpc01:0]<stdout>:");
  TagFormat f;
  EXPECT_TRUE(parse_tag_format("horovod", &f));
  EXPECT_EQ(f, TagFormat::kHorovod);
  EXPECT_TRUE(parse_tag_format("mpi", &f));
  EXPECT_EQ(f, TagFormat::kMpi);
  EXPECT_TRUE(parse_tag_format("short", &f));
  EXPECT_TRUE(parse_tag_format("host", &f));
  EXPECT_FALSE(parse_tag_format("Horovod", &f));
  EXPECT_FALSE(parse_tag_format("", &f));
}

namespace {
std::vector<Line> split_all(const std::vector<std::string>& pieces, bool finish = true) {
  LineSplitter s;
  std::vector<Line> out;
  for (const auto& p : pieces) s.feed(p.data(), p.size(), &out);
  if (finish) s.finish(&out);
  return out;
}
}  // namespace

TEST(LaunchTagger, SplitsOnNewlineAndCarriageReturn) {
  auto l = split_all({"a\nb\rc\r\nd\n"});
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].text, "a");
  EXPECT_EQ(l[0].end, "\n");
  EXPECT_EQ(l[1].text, "b");
  EXPECT_EQ(l[1].end, "\r");
  EXPECT_EQ(l[2].text, "c");
  EXPECT_EQ(l[2].end, "\r\n");
  EXPECT_EQ(l[3].text, "d");
  // Progress bar style.
  auto p = split_all({"10%\r20%\r30%\n"});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].text, "10%");
  EXPECT_EQ(p[2].text, "30%");
  // Empty lines are lines.
  auto e = split_all({"\n\n"});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].text, "");
}

TEST(LaunchTagger, CrLfSplitAcrossReads) {
  auto l = split_all({"a\r", "\nb\n"});
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].text, "a");
  EXPECT_EQ(l[0].end, "\r\n");
  EXPECT_EQ(l[1].text, "b");
  // A lone '\r' at the end of a read waits; the next byte decides.
  LineSplitter s;
  std::vector<Line> out;
  s.feed("x\r", 2, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(s.has_pending_cr());
  s.feed("y", 1, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].end, "\r");
  // flush_cr emits it now; a following '\n' becomes a continuation (files keep the bytes).
  LineSplitter t;
  out.clear();
  t.feed("p\r", 2, &out);
  t.flush_cr(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "p");
  EXPECT_EQ(out[0].end, "\r");
  t.feed("\nq\n", 3, &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[1].continuation);
  EXPECT_EQ(out[1].end, "\n");
  EXPECT_EQ(out[2].text, "q");
  // A stream that ends right after a flushed '\r' line (a slow rank's exit, the launcher's 100 ms
  // flush first): an empty continuation at end of stream, so the console still ends the line.
  LineSplitter u;
  out.clear();
  u.feed("done\r", 5, &out);
  u.flush_cr(&out);
  u.finish(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].end, "\r");
  EXPECT_FALSE(out[0].at_eof);
  EXPECT_TRUE(out[1].continuation);
  EXPECT_TRUE(out[1].at_eof);
  EXPECT_EQ(out[1].text + out[1].end, "");
}

// The console shows "done\r\n" for a last line "done\r" whether the stream's end came with it or
// after the launcher had flushed the '\r' line; the rank's file keeps the bytes.
TEST(LaunchTagger, ConsoleEndsAFlushedCarriageReturnLineAtEndOfStream) {
  Line shown;
  shown.text = "done";
  shown.end = "\r";
  Line end_of_stream;
  end_of_stream.continuation = true;
  end_of_stream.at_eof = true;
  int out_pipe[2];
  ASSERT_EQ(::pipe(out_pipe), 0);
  {
    OutputSink sink(TagFormat::kHorovod, false, out_pipe[1], 2);
    sink.emit(0, Stream::kStdout, shown);
    sink.emit(0, Stream::kStdout, end_of_stream);
    sink.flush();
  }
  ::close(out_pipe[1]);
  char buf[64] = {};
  const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
  ::close(out_pipe[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? size_t(n) : 0), "[0]<stdout>:done\r\n");
}

TEST(LaunchTagger, LastLineWithoutNewline) {
  auto l = split_all({"one\ntwo"});
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].text, "two");
  EXPECT_EQ(l[1].end, "");
  auto cr = split_all({"one\r"});
  ASSERT_EQ(cr.size(), 1u);
  EXPECT_EQ(cr[0].end, "\r");
  EXPECT_TRUE(cr[0].at_eof);
  EXPECT_TRUE(l[1].at_eof);
  EXPECT_FALSE(l[0].at_eof);
  EXPECT_TRUE(split_all({""}).empty());
  // Without finish, the fragment stays buffered.
  auto nf = split_all({"abc"}, false);
  EXPECT_TRUE(nf.empty());
}

TEST(LaunchTagger, PartialWritesByteByByte) {
  std::string text = "alpha\nbeta\r\ngamma\rdelta";
  std::vector<std::string> bytes;
  for (char c : text) bytes.push_back(std::string(1, c));
  auto l = split_all(bytes);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].text, "alpha");
  EXPECT_EQ(l[1].text, "beta");
  EXPECT_EQ(l[1].end, "\r\n");
  EXPECT_EQ(l[2].text, "gamma");
  EXPECT_EQ(l[2].end, "\r");
  EXPECT_EQ(l[3].text, "delta");
  EXPECT_EQ(l[3].end, "");
}

TEST(LaunchTagger, BinaryBytesUntouched) {
  std::string bin;
  for (int b = 0; b < 256; ++b)
    if (b != '\n' && b != '\r') bin += static_cast<char>(b);
  std::string utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xff\xfe";
  auto l = split_all({bin + "\n" + utf8 + "\n"});
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].text, bin);
  EXPECT_EQ(l[1].text, utf8);
}

TEST(LaunchTagger, MegabyteLineInRandomChunks) {
  std::string big(1 << 20, 'z');
  for (size_t i = 0; i < big.size(); i += 777) big[i] = static_cast<char>('a' + i % 26);
  std::string all = big + "\nafter\n";
  std::vector<std::string> pieces;
  unsigned seed = 1;
  for (size_t pos = 0; pos < all.size();) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 1 + (seed >> 8) % 70000;
    pieces.push_back(all.substr(pos, n));
    pos += n;
  }
  auto l = split_all(pieces);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].text.size(), big.size());
  EXPECT_TRUE(l[0].text == big);
  EXPECT_EQ(l[1].text, "after");
}

TEST(LaunchTagger, MaxLineCutsRunawayLines) {
  LineSplitter s(true, 10);
  std::vector<Line> out;
  std::string data(25, 'q');
  s.feed(data.data(), data.size(), &out);
  s.finish(&out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].text.size(), 10u);
  EXPECT_EQ(out[2].text.size(), 5u);
  EXPECT_TRUE(out[0].cut);
  EXPECT_TRUE(out[1].cut);
  EXPECT_FALSE(out[2].cut);
}

TEST(LaunchTagger, NewlineOnlyModeKeepsCarriageReturns) {
  LineSplitter s(false);
  std::vector<Line> out;
  std::string d = "[1,0]<stdout>:a\rb\nc";
  s.feed(d.data(), d.size(), &out);
  s.finish(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].text, "[1,0]<stdout>:a\rb");
}

TEST(LaunchTagger, ParsesMpirunTags) {
  int rank;
  Stream s;
  size_t off;
  ASSERT_TRUE(parse_mpi_tag("[1,3]<stdout>:hello", &rank, &s, &off));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(s, Stream::kStdout);
  EXPECT_EQ(std::string("[1,3]<stdout>:hello").substr(off), "hello");
  ASSERT_TRUE(parse_mpi_tag("[1,12]<stderr>:", &rank, &s, &off));
  EXPECT_EQ(rank, 12);
  EXPECT_EQ(s, Stream::kStderr);
  ASSERT_TRUE(parse_mpi_tag("[1,0]<stddiag>:x", &rank, &s, &off));
  EXPECT_EQ(s, Stream::kStderr);
  EXPECT_FALSE(parse_mpi_tag("--------", &rank, &s, &off));
  EXPECT_FALSE(parse_mpi_tag("[1,x]<stdout>:", &rank, &s, &off));
  EXPECT_FALSE(parse_mpi_tag("[0]<stdout>:x", &rank, &s, &off));
  EXPECT_FALSE(parse_mpi_tag("[1,0]<stdin>:x", &rank, &s, &off));
  // mpirun leaves a partial last line open; the next rank's tag follows on the same line.
  Line l;
  l.text = "[1,0]<stdout>:c[1,1]<stderr>:a";
  l.end = "\n";
  auto pieces = split_mpi_line(l);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].rank, 0);
  EXPECT_EQ(pieces[0].line.text, "c");
  EXPECT_EQ(pieces[0].line.end, "");
  EXPECT_EQ(pieces[1].rank, 1);
  EXPECT_EQ(pieces[1].stream, Stream::kStderr);
  EXPECT_EQ(pieces[1].line.text, "a");
  EXPECT_EQ(pieces[1].line.end, "\n");
  Line plain;
  plain.text = "mpirun noticed that ...";
  EXPECT_TRUE(split_mpi_line(plain).empty());
  Line brackets;
  brackets.text = "[1,2]<stdout>:array [1, 2] fine";
  auto b = split_mpi_line(brackets);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].line.text, "array [1, 2] fine");
  // Open MPI tags each chunk it reads from a rank's pipe: a line read in two chunks comes with the
  // same rank's tag repeated mid-line (seen from a ./reference rank under --mpi), and stays one line.
  Line chunks;
  chunks.text = "[1,0]<stdout>:Train Epoch: 1 [640/30000 (2%)]\t[1,0]<stdout>:Loss: 2.335096";
  chunks.end = "\n";
  auto one = split_mpi_line(chunks);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rank, 0);
  EXPECT_EQ(one[0].line.text, "Train Epoch: 1 [640/30000 (2%)]\tLoss: 2.335096");
  EXPECT_EQ(one[0].line.end, "\n");
  // The same rank's other stream is another line.
  Line streams;
  streams.text = "[1,0]<stdout>:a[1,0]<stderr>:b[1,0]<stderr>:c";
  auto two = split_mpi_line(streams);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].line.text, "a");
  EXPECT_EQ(two[1].stream, Stream::kStderr);
  EXPECT_EQ(two[1].line.text, "bc");
}

TEST(LaunchTagger, TimestampPrefix) {
  std::string t = timestamp_prefix(0);
  EXPECT_TRUE(std::regex_match(t, std::regex("^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\\d \\d\\d:\\d\\d:\\d\\d \\d{4}$")))
      << "'" << t << "'";
}

// ============================================================================================
// Unit: agent protocol, flags, mpirun plan
// ============================================================================================

TEST(LaunchAgentProtocol, RoundTrip) {
  AgentRequest r;
  r.nonce = "abc123";
  r.openblas_local_size = 2;
  r.env = {"A=1", "BARESGD_SECRET=s3cr3t", "EMPTY=", "WEIRD=a=b\nc"};
  r.argv = {"sh", "-c", "echo 'x y'", ""};
  std::string wire = encode_agent_request(r);
  ASSERT_EQ(wire.compare(0, std::strlen(kAgentMagic), kAgentMagic), 0);
  std::string body = wire.substr(std::strlen(kAgentMagic) + 4);
  AgentRequest d;
  ASSERT_TRUE(decode_agent_request(body, &d));
  EXPECT_EQ(d.nonce, r.nonce);
  EXPECT_EQ(d.openblas_local_size, 2);
  EXPECT_EQ(d.env, r.env);
  EXPECT_EQ(d.argv, r.argv);
  for (size_t cut = 0; cut < body.size(); cut += 7) EXPECT_FALSE(decode_agent_request(body.substr(0, cut), &d)) << cut;
  EXPECT_FALSE(decode_agent_request(body + "x", &d));
  AgentRequest bad = r;
  bad.env = {"NOEQUALS"};
  std::string bw = encode_agent_request(bad);
  EXPECT_FALSE(decode_agent_request(bw.substr(std::strlen(kAgentMagic) + 4), &d));
}

TEST(LaunchAgentProtocol, ControlBytesAndMarkers) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGKILL, SIGUSR1})
    EXPECT_EQ(agent_control_signal(agent_control_byte(sig)), sig);  // SIGUSR1: ./train's saved stop
  EXPECT_EQ(agent_control_byte(SIGUSR2), 0);
  EXPECT_EQ(agent_control_signal('x'), 0);
  std::string before, kind;
  long v = 0;
  std::string pl = agent_pid_line("n0nce", 4321);
  ASSERT_TRUE(parse_agent_marker(pl.substr(0, pl.size() - 1), "n0nce", &before, &kind, &v));
  EXPECT_EQ(kind, "pid");
  EXPECT_EQ(v, 4321);
  EXPECT_EQ(before, "");
  std::string sl = agent_status_line("n0nce", 9);  // killed by SIGKILL
  ASSERT_TRUE(parse_agent_marker("partial" + sl.substr(0, sl.size() - 1), "n0nce", &before, &kind, &v));
  EXPECT_EQ(before, "partial");
  EXPECT_EQ(kind, "signal");
  EXPECT_EQ(v, 9);
  std::string el = agent_status_line("n0nce", 3 << 8);
  ASSERT_TRUE(parse_agent_marker(el.substr(0, el.size() - 1), "n0nce", &before, &kind, &v));
  EXPECT_EQ(kind, "exit");
  EXPECT_EQ(v, 3);
  EXPECT_FALSE(parse_agent_marker(el.substr(0, el.size() - 1), "other", &before, &kind, &v));
  EXPECT_FALSE(parse_agent_marker("@@BSGD-AGENT n0nce pid x", "n0nce", &before, &kind, &v));
}

namespace {
LaunchOptions parse(const std::vector<std::string>& a) { return parse_launch_options(a); }
}  // namespace

TEST(LaunchOptions, ParsesFlags) {
  auto o = parse({"-np",
                  "4",
                  "--gloo",
                  "-H",
                  "a:2,b:2",
                  "-p",
                  "2222",
                  "-i",
                  "key",
                  "-F",
                  "cfg",
                  "--tag-format=mpi",
                  "--output-filename",
                  "out",
                  "--timestamp",
                  "--verbose",
                  "--start-timeout",
                  "5",
                  "--timeout=7.5",
                  "--network-interface",
                  "lo",
                  "python3",
                  "train.py",
                  "--epochs",
                  "1"});
  EXPECT_EQ(o.np, 4);
  EXPECT_EQ(o.transport, Transport::kGloo);
  EXPECT_EQ(o.hosts, "a:2,b:2");
  EXPECT_EQ(o.ssh_port, "2222");
  EXPECT_EQ(o.ssh_identity, "key");
  EXPECT_EQ(o.ssh_config, "cfg");
  EXPECT_EQ(o.tag_format, TagFormat::kMpi);
  EXPECT_EQ(o.output_dir, "out");
  EXPECT_TRUE(o.timestamp);
  EXPECT_TRUE(o.verbose);
  EXPECT_DOUBLE_EQ(o.start_timeout, 5);
  EXPECT_DOUBLE_EQ(o.timeout, 7.5);
  EXPECT_EQ(o.network_interface, "lo");
  EXPECT_EQ(o.command, (std::vector<std::string>{"python3", "train.py", "--epochs", "1"}));
  auto m = parse({"--num-proc=2", "--mpi", "--hostfile", "hf", "--", "-weird-cmd"});
  EXPECT_EQ(m.transport, Transport::kMpi);
  EXPECT_EQ(m.hostfile, "hf");
  EXPECT_EQ(m.command, (std::vector<std::string>{"-weird-cmd"}));
  EXPECT_TRUE(parse({"-h"}).help);
}

// --stop-grace: the seconds a stop's SIGTERM/SIGUSR1 leaves the ranks (./train saves its step)
// before SIGKILL; 3 by default, 0.1..100000.
TEST(LaunchOptions, StopGraceIsSecondsInRange) {
  EXPECT_EQ(parse({"-np", "2", "--gloo", "x"}).stop_grace, 3.0);
  EXPECT_EQ(parse({"-np", "2", "--gloo", "--stop-grace", "100", "x"}).stop_grace, 100.0);
  EXPECT_EQ(parse({"-np", "2", "--gloo", "--stop-grace=0.5", "x"}).stop_grace, 0.5);
  EXPECT_EQ(usage_error({"-np", "2", "--gloo", "--stop-grace", "0.05", "x"}),
            "--stop-grace must be 0.1..100000 seconds (got 0.05)");
  EXPECT_EQ(usage_error({"-np", "2", "--gloo", "--stop-grace", "soon", "x"}),
            "--stop-grace 'soon' is not a number of seconds");
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--stop-grace"}), "--stop-grace needs a value"));
}

TEST(LaunchOptions, RejectsBadCommandLines) {
  bool usage = false;
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--bogus", "x"}, &usage), "unknown option '--bogus'"));
  EXPECT_TRUE(usage);
  // No -np: the Slurm allocation's, or refused by choose_hosts (tests/test_slurm_hostlist.cc).
  EXPECT_EQ(usage_error({"--gloo", "x"}), "");
  EXPECT_TRUE(contains(usage_error({"-np", "0", "--gloo", "x"}), "-np must be >= 1"));
  EXPECT_TRUE(contains(usage_error({"-np", "-3", "--gloo", "x"}), "-np must be >= 1"));
  EXPECT_TRUE(contains(usage_error({"-np", "two", "--gloo", "x"}), "not a whole number"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--mpi", "x"}), "--gloo and --mpi"));
  EXPECT_EQ(usage_error({"-np", "2", "x"}), "");  // neither --gloo nor --mpi: picked as horovodrun does
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo"}), "missing CMD"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "-H"}), "-H needs a value"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--tag-format", "xml", "x"}), "--tag-format 'xml'"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--timeout", "0", "x"}), "--timeout"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--start-timeout", "abc", "x"}), "--start-timeout"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "-p", "70000", "x"}), "1..65535"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "-H", "a", "--hostfile", "f", "x"}), "mutually exclusive"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo=yes", "x"}), "takes no value"));
}

TEST(LaunchMpirun, CommandLineAndEnvironment) {
  MpirunInputs in;
  in.np = 4;
  in.hosts = {{"hpc01", 2}, {"hpc03", 2}};
  in.command = {"python3", "train.py"};
  in.base_env = {"PATH=/usr/bin", "BARESGD_RANK=7", "BARESGD_SIZE=9", "OMPI_MCA_btl=self,tcp", "HOME=/root"};
  in.ssh.config = "/tmp/cfg";
  in.ssh.port = "2222";
  in.as_root = true;
  in.all_loopback = true;
  in.openblas_threads = 3;
  in.job_id = "job1";
  in.secret = "S3CRET";
  MpirunPlan p = build_mpirun_plan(in);
  std::string cmd;
  for (auto& a : p.argv) cmd += a + " ";
  EXPECT_EQ(p.argv[0], "mpirun");
  EXPECT_TRUE(contains(cmd, "--allow-run-as-root -np 4 -H hpc01:2,hpc03:2 -bind-to none -map-by slot --tag-output "))
      << cmd;
  EXPECT_TRUE(contains(cmd, "-x BARESGD_COMM=mpi -x OPENBLAS_NUM_THREADS ")) << cmd;
  EXPECT_TRUE(contains(cmd, "-x OMPI_MCA_btl ")) << cmd;
  EXPECT_TRUE(contains(cmd, "-mca plm_rsh_args -F /tmp/cfg -p 2222 python3 train.py ")) << cmd;
  EXPECT_FALSE(contains(cmd, "S3CRET"));
  std::set<std::string> env(p.env.begin(), p.env.end());
  EXPECT_TRUE(env.count("BARESGD_SECRET=S3CRET"));
  EXPECT_TRUE(env.count("BARESGD_COMM=mpi"));
  EXPECT_TRUE(env.count("OPENBLAS_NUM_THREADS=3"));
  EXPECT_TRUE(env.count("OMPI_MCA_btl=self,tcp"));  // the user's value stays
  EXPECT_TRUE(env.count("OMPI_MCA_btl_tcp_if_include=lo"));
  EXPECT_TRUE(env.count("OMPI_MCA_oob_tcp_if_include=lo"));
  EXPECT_TRUE(env.count("OMPI_MCA_if_base_do_not_resolve=1"));
  EXPECT_TRUE(env.count("OMPI_MCA_pml=ob1"));  // one machine: no UCX start-up
  EXPECT_TRUE(contains(cmd, "-x OMPI_MCA_pml ")) << cmd;
  EXPECT_FALSE(env.count("BARESGD_RANK=7"));  // per-rank values come from Open MPI
  EXPECT_FALSE(env.count("BARESGD_SIZE=9"));
  in.as_root = false;
  in.all_loopback = false;
  in.ssh = SshOptions();
  in.base_env = {"PATH=/usr/bin", "OPENBLAS_NUM_THREADS=5"};
  MpirunPlan q = build_mpirun_plan(in);
  std::string qcmd;
  for (auto& a : q.argv) qcmd += a + " ";
  EXPECT_FALSE(contains(qcmd, "allow-run-as-root"));
  EXPECT_FALSE(contains(qcmd, "plm_rsh_args"));
  std::set<std::string> qenv(q.env.begin(), q.env.end());
  EXPECT_TRUE(qenv.count("OPENBLAS_NUM_THREADS=5"));
  EXPECT_FALSE(qenv.count("OMPI_MCA_btl_tcp_if_include=lo"));
  for (const std::string& e : q.env) EXPECT_NE(e.rfind("OMPI_MCA_pml=", 0), 0u) << "across hosts Open MPI chooses";
  in.all_loopback = true;
  in.base_env = {"PATH=/usr/bin", "OMPI_MCA_pml=ucx"};
  MpirunPlan u = build_mpirun_plan(in);
  std::set<std::string> uenv(u.env.begin(), u.env.end());
  EXPECT_TRUE(uenv.count("OMPI_MCA_pml=ucx"));  // the user's choice stays
  EXPECT_FALSE(uenv.count("OMPI_MCA_pml=ob1"));
}

TEST(LaunchEnv, HostSpecificVariablesStayHome) {
  EXPECT_TRUE(is_host_specific_env("HOSTNAME"));
  EXPECT_TRUE(is_host_specific_env("SSH_CONNECTION"));
  EXPECT_TRUE(is_host_specific_env("BASH_FUNC_x%%"));
  EXPECT_FALSE(is_host_specific_env("PATH"));
  EXPECT_FALSE(is_host_specific_env("PYTHONPATH"));
  EXPECT_FALSE(is_host_specific_env("OMP_NUM_THREADS"));
}

TEST(LaunchOptions, DryRunAndTimelineFlags) {
  auto o = parse({"-np", "2", "--gloo", "--dry-run", "--timeline-filename", "/tmp/t.json", "x"});
  EXPECT_TRUE(o.dry_run);
  EXPECT_EQ(o.timeline_file, "/tmp/t.json");
  auto d = parse({"-np", "2", "--mpi", "--timeline-filename=t.json", "x"});
  EXPECT_FALSE(d.dry_run);
  EXPECT_EQ(d.timeline_file, "t.json");
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--timeline-filename", "", "x"}), "--timeline-filename"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "--dry-run=yes", "x"}), "takes no value"));
  EXPECT_TRUE(contains(launch_help_text(), "--dry-run"));
  EXPECT_TRUE(contains(launch_help_text(), "--timeline-filename FILE"));
}

TEST(LaunchMpirun, LoopbackEnvironmentInOnePlace) {
  // The project's rule for every Open MPI run on loopback, kept by the launcher and the tests alike.
  std::set<std::string> want = {"OMPI_MCA_btl=self,tcp", "OMPI_MCA_btl_tcp_if_include=lo",
                                "OMPI_MCA_oob_tcp_if_include=lo", "OMPI_MCA_if_base_do_not_resolve=1"};
  std::set<std::string> got;
  for (const auto& [name, value] : loopback_openmpi_env()) got.insert(name + "=" + value);
  EXPECT_EQ(got, want);
  // One loopback host runs Open MPI's self and shared-memory BTLs (no tcp listener); two "hosts"
  // on this machine get self,tcp.
  MpirunInputs in;
  in.np = 2;
  in.command = {"./train"};
  in.base_env = {"PATH=/usr/bin"};
  in.all_loopback = true;
  in.hosts = {{"localhost", 2}};
  std::set<std::string> one;
  for (const std::string& e : build_mpirun_plan(in).env) one.insert(e);
  EXPECT_TRUE(one.count("OMPI_MCA_btl_tcp_if_include=lo"));
  EXPECT_TRUE(one.count("OMPI_MCA_if_base_do_not_resolve=1"));
  EXPECT_TRUE(one.count("OMPI_MCA_btl=self,vader"));
  in.hosts = {{"hpc01", 1}, {"hpc03", 1}};
  in.network_interface = "eth9";
  std::set<std::string> two;
  for (const std::string& e : build_mpirun_plan(in).env) two.insert(e);
  EXPECT_TRUE(two.count("OMPI_MCA_btl=self,tcp"));
  EXPECT_TRUE(two.count("OMPI_MCA_btl_tcp_if_include=eth9"));  // --network-interface wins over lo
  EXPECT_TRUE(two.count("OMPI_MCA_oob_tcp_if_include=eth9"));
}

TEST(LaunchMpirun, HorovodVariablesReachRemoteRanks) {
  MpirunInputs in;
  in.np = 2;
  in.hosts = {{"hpc01", 1}, {"hpc03", 1}};
  in.command = {"./train"};
  in.base_env = {"PATH=/usr/bin", "HOROVOD_TIMELINE=/tmp/t.json", "HOROVODX=no"};
  MpirunPlan p = build_mpirun_plan(in);
  std::string cmd;
  for (auto& a : p.argv) cmd += a + " ";
  EXPECT_TRUE(contains(cmd, " -x HOROVOD_TIMELINE ")) << cmd;  // mpirun forwards it to orted's ranks
  EXPECT_TRUE(contains(cmd, " -x HOROVODX ")) << cmd;          // as horovodrun: every exported variable
  EXPECT_FALSE(contains(cmd, "/tmp/t.json")) << cmd;           // the value travels in the environment
}

TEST(LaunchMpirun, ForwardsTheEnvironmentAndTheUsersMpiFlags) {
  MpirunInputs in;
  in.np = 2;
  in.hosts = {{"hpc01", 1}, {"hpc03", 1}};
  in.command = {"./train"};
  in.base_env = {"PATH=/usr/bin", "FOO=bar", "PWD=/here", "HOSTNAME=vm", "BARESGD_RANK=3", "SSH_TTY=/dev/pts/1"};
  in.extra_env = {"BAZ=qux", "FOO"};
  in.mpi_args = {"--mca", "foo", "a b"};
  in.bind_to = "core";
  in.map_by = "node";
  MpirunPlan p = build_mpirun_plan(in);
  std::string cmd;
  for (auto& a : p.argv) cmd += a + " ";
  EXPECT_TRUE(contains(cmd, " -x FOO ")) << cmd;
  EXPECT_TRUE(contains(cmd, " -x BAZ ")) << cmd;
  EXPECT_TRUE(contains(cmd, " -bind-to core -map-by node ")) << cmd;
  EXPECT_TRUE(contains(cmd, " --mca foo a b ./train ")) << cmd;  // the user's words, just before CMD
  for (const char* host_specific : {"PWD", "HOSTNAME", "BARESGD_RANK", "SSH_TTY"})
    EXPECT_FALSE(contains(cmd, std::string(" -x ") + host_specific + " ")) << host_specific << ": " << cmd;
  EXPECT_FALSE(contains(cmd, "qux")) << cmd;  // values travel in the environment, never in argv
  std::set<std::string> env(p.env.begin(), p.env.end());
  EXPECT_TRUE(env.count("BAZ=qux"));
  EXPECT_TRUE(env.count("FOO=bar"));
}

// Issue 25 case 5: hosts with more ranks than cores get OMPI_MCA_mpi_yield_when_idle=1 (Open MPI
// busy-polls otherwise: mpirun's -H slots hide the oversubscription), and the plan says it set it
// (./launch then says so in one line); a value of the user's, even 0 or through -x, wins silently.
TEST(LaunchMpirun, OversubscribedHostsYieldUnlessTheUserChose) {
  MpirunInputs in;
  in.np = 4;
  in.hosts = {{"localhost", 4}};
  in.command = {"./train"};
  in.base_env = {"PATH=/usr/bin"};
  in.all_loopback = true;
  in.oversubscribed = true;
  MpirunPlan p = build_mpirun_plan(in);
  EXPECT_TRUE(p.yield_set);
  EXPECT_TRUE(std::count(p.env.begin(), p.env.end(), "OMPI_MCA_mpi_yield_when_idle=1"));
  std::string cmd;
  for (auto& a : p.argv) cmd += a + " ";
  EXPECT_TRUE(contains(cmd, " -x OMPI_MCA_mpi_yield_when_idle ")) << cmd;
  in.base_env = {"PATH=/usr/bin", "OMPI_MCA_mpi_yield_when_idle=0"};
  MpirunPlan user = build_mpirun_plan(in);
  EXPECT_FALSE(user.yield_set);
  EXPECT_TRUE(std::count(user.env.begin(), user.env.end(), "OMPI_MCA_mpi_yield_when_idle=0"));
  in.base_env = {"PATH=/usr/bin"};
  in.extra_env = {"OMPI_MCA_mpi_yield_when_idle=0"};
  EXPECT_FALSE(build_mpirun_plan(in).yield_set);
  in.extra_env = {};
  in.oversubscribed = false;
  MpirunPlan fits = build_mpirun_plan(in);
  EXPECT_FALSE(fits.yield_set);
  for (const std::string& e : fits.env) EXPECT_NE(e.rfind("OMPI_MCA_mpi_yield_when_idle=", 0), 0u) << e;
}

// Issue 25 case 6: without --gloo or --mpi ./launch refused ("choose how to start the ranks");
// now it picks as horovodrun's run_controller does (MPI when Horovod has it, else Gloo; an elastic
// job Gloo), with MPI meaning this build's backend and an mpirun on PATH, and says which.
TEST(LaunchOptions, WithoutGlooOrMpiPicksAsHorovodrunAndSaysWhich) {
  const std::string dir = testutil::make_temp_dir("auto_transport");
  testutil::write_file(dir + "/mpirun", "#!/bin/sh\nexit 99\n");  // found, never run
  testutil::run("chmod +x " + dir + "/mpirun");
  auto with_path = [](const std::string& path) -> EnvLookup {
    return [path](const char* name) -> const char* { return std::string(name) == "PATH" ? path.c_str() : nullptr; };
  };
  const std::vector<std::string> args = {"-np", "2", "./train"};
  LaunchOptions found = parse_launch_options(args, with_path(dir));
  LaunchOptions missing = parse_launch_options(args, with_path("/nonexistent"));
#if BARESGD_HAVE_MPI
  EXPECT_EQ(found.transport, Transport::kMpi);
  EXPECT_EQ(found.notices, std::vector<std::string>{"neither --gloo nor --mpi: using --mpi, as horovodrun does when "
                                                    "MPI is built in (mpirun: " +
                                                    dir + "/mpirun)"});
  EXPECT_EQ(missing.notices, std::vector<std::string>{"neither --gloo nor --mpi: using --gloo, as horovodrun does "
                                                      "when MPI is not available (mpirun is not on PATH)"});
#else
  EXPECT_EQ(found.transport, Transport::kGloo);
  EXPECT_EQ(found.notices, std::vector<std::string>{"neither --gloo nor --mpi: using --gloo, as horovodrun does when "
                                                    "MPI is not available (this build has no MPI)"});
#endif
  EXPECT_EQ(missing.transport, Transport::kGloo);
  LaunchOptions elastic = parse_launch_options({"--min-np", "1", "-H", "localhost:2", "./train"}, with_path(dir));
  EXPECT_EQ(elastic.transport, Transport::kGloo);
  EXPECT_EQ(elastic.notices,
            std::vector<std::string>{"neither --gloo nor --mpi: using --gloo, as horovodrun does for an elastic job"});
  // An mpirun flag with no mpirun to pass it to is refused, saying why Gloo was picked.
  try {
    parse_launch_options({"-np", "2", "-x", "FOO=1", "./train"}, with_path("/nonexistent"));
    ADD_FAILURE() << "-x accepted with Gloo picked";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("-x is for --mpi (mpirun's option); without --gloo or --mpi ./launch picked "
                                          "--gloo when MPI is not available",
                                          0),
              0u)
        << e.what();
  }
  for (const char* flag : {"--gloo", "--mpi"}) {
    LaunchOptions chosen = parse_launch_options({"-np", "2", flag, "./train"}, with_path(dir));
    EXPECT_EQ(chosen.transport, std::string(flag) == "--gloo" ? Transport::kGloo : Transport::kMpi);
    EXPECT_TRUE(chosen.notices.empty()) << flag;
  }
  testutil::run("rm -rf " + dir);
}

TEST(ShellWords, SplitsAsAShellWouldWithoutExpanding) {
  using V = std::vector<std::string>;
  auto words = [](const std::string& s) {
    V w;
    std::string why;
    EXPECT_TRUE(split_shell_words(s, &w, &why)) << s << ": " << why;
    return w;
  };
  EXPECT_EQ(words(""), V{});
  EXPECT_EQ(words("  a\tb\n c "), (V{"a", "b", "c"}));
  EXPECT_EQ(words("--mca btl 'self,tcp' \"a \\\"b\\\" $X\" c\\ d"),
            (V{"--mca", "btl", "self,tcp", "a \"b\" $X", "c d"}));
  EXPECT_EQ(words("''"), V{""});
  EXPECT_EQ(words("a'b'\"c\"d"), V{"abcd"});
  for (const char* bad : {"'x", "\"x", "x\\"}) {
    V w;
    std::string why;
    EXPECT_FALSE(split_shell_words(bad, &w, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

TEST(LaunchOptions, MpiOnlyFlagsAndTheirErrors) {
  auto m = parse({"-np", "2", "--mpi", "-x", "A=1", "-x", "B", "--mpi-args", "--mca x 'y z'", "--bind-to", "core",
                  "--map-by", "node", "true"});
  EXPECT_EQ(m.mpi_env, (std::vector<std::string>{"A=1", "B"}));
  EXPECT_EQ(m.mpi_args, (std::vector<std::string>{"--mca", "x", "y z"}));
  EXPECT_EQ(m.bind_to, "core");
  EXPECT_EQ(m.map_by, "node");
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--mpi", "--mpi-args", "'x", "true"}), "--mpi-args: unclosed '"));
  EXPECT_TRUE(contains(usage_error({"-np", "2", "--gloo", "-x", "A=1", "true"}), "-x is for --mpi"));
}
