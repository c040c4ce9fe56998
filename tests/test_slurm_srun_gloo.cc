// test_slurm_srun_gloo: plain `srun -n N ./train` (no --mpi=pmix, no rendezvous flag) over Gloo on
// the real one-machine Slurm cluster (tests/slurm_cluster_fixture.h): rank 0 serves the
// rendezvous store on its node, admitted by MUNGE credentials from the cluster's munged
// (comm/slurm_store.h). One 4-rank job bit-equal to ./launch; a credential of another uid (a
// task really running as nobody) and an expired one refused with one line, every task
// non-zero; a silent listener in rank 0's place named within the timeout; a silent listener on
// the step's first port passed over; in-process, a rogue listener that answers the handshake with
// a reflected or misdirected credential refused by the client. Each task's exit code, pid and
// stderr are kept per task.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "comm/munge_store_client.h"
#include "comm/store_munge.h"
#include "comm/store_protocol.h"
#include "tests/skip_policy.h"
#include "tests/slurm_cluster_fixture.h"
#include "tests/test_util.h"

namespace {

using testutil::make_temp_dir;
using testutil::read_file;
using testutil::run;
using testutil::RunResult;
using testutil::write_file;

class SlurmSrunGloo : public SlurmClusterFixture {};

// True when /proc/pid names a live (not zombie) process.
bool alive(const std::string& pid) {
  if (pid.empty()) return false;
  std::string stat = read_file("/proc/" + pid + "/stat");
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A task wrapper: runs "$@" (as nobody on the task ranks listed in AS_NOBODY), records its pid
// and exit code in d/pid.<task> and d/rc.<task>, exits with that code.
std::string write_task_script(const std::string& d) {
  write_file(d + "/task.sh",
             "#!/bin/bash\n"
             "case \" $AS_NOBODY \" in *\" $SLURM_PROCID \"*) set -- setpriv --reuid=65534 --regid=65534 "
             "--clear-groups \"$@\" ;; esac\n"
             "\"$@\" & pid=$!\necho $pid > " +
                 d +
                 "/pid.$SLURM_PROCID\nwait $pid; rc=$?\n"
                 "echo $rc > " +
                 d + "/rc.$SLURM_PROCID\nexit $rc\n");
  return "bash " + d + "/task.sh ";
}

// srun -n n with each task's stderr in d/err.<task>.
RunResult srun(const std::string& d, int n, const std::string& env, const std::string& task_cmd) {
  return SlurmClusterFixture::slurm(env + " srun -n " + std::to_string(n) + " -e " + d + "/err.%t " + task_cmd, 150);
}

int line_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST_F(SlurmSrunGloo, FourTasksTrainAsOneJobBitEqualToLaunch) {
  const std::string d = make_temp_dir("srun_gloo");
  const std::string flags = " --epochs 1 --max-steps 5 --dump-params ";
  RunResult r = srun(d, 4, "", write_task_script(d) + train_cmd() + flags + d + "/srun.%r");
  ASSERT_EQ(r.status, 0) << r.out << r.err << read_file(d + "/err.0") << read_file(d + "/err.1");
  EXPECT_NE(read_file(d + "/err.0").find("world_size=4 backend=gloo"), std::string::npos) << read_file(d + "/err.0");
  const std::string p0 = read_file(d + "/srun.0");
  ASSERT_EQ(p0.size(), 21840u * 4);
  for (int k = 1; k < 4; ++k) EXPECT_TRUE(read_file(d + "/srun." + std::to_string(k)) == p0) << "rank " << k;
  RunResult l = run(testutil::launch_bin() + " -np 4 --gloo " + train_cmd() + flags + d + "/launch.%r", 150);
  ASSERT_EQ(l.status, 0) << l.out << l.err;
  EXPECT_TRUE(read_file(d + "/launch.0") == p0) << "srun's Gloo job and ./launch's ended with different parameters";
  run("rm -rf " + d);
}

// Task 1 really runs as nobody: its credential carries uid 65534, and rank 0's store (root's
// job) refuses it. Task 1 says so in one line; rank 0 then times out waiting for it.
TEST_F(SlurmSrunGloo, CredentialOfAnotherUidIsRefusedAndEveryTaskFails) {
  if (::geteuid() != 0) BARESGD_SKIP("needs root to run one task as nobody (setpriv)");
  const std::string d = make_temp_dir("srun_gloo_uid");
  RunResult r =
      srun(d, 2, "AS_NOBODY=1", write_task_script(d) + train_cmd() + " --epochs 1 --max-steps 1 --start-timeout 5");
  EXPECT_NE(r.status, 0);
  const std::string err1 = read_file(d + "/err.1"), err0 = read_file(d + "/err.0");
  EXPECT_EQ(line_count(err1), 1) << err1;
  EXPECT_NE(err1.find("train: error: rank 1"), std::string::npos) << err1;
  EXPECT_NE(err1.find("refused this rank's MUNGE credential: MUNGE credential from client 127.0.0.1:"),
            std::string::npos)
      << err1;
  EXPECT_NE(err1.find("belongs to uid 65534, not this job's uid 0"), std::string::npos) << err1;
  EXPECT_NE(err0.find("rank 0's rendezvous store refused client 127.0.0.1:"), std::string::npos) << err0;
  EXPECT_NE(err0.find("rank 1 never registered"), std::string::npos) << err0;
  EXPECT_EQ(trimmed(read_file(d + "/rc.0")), "1");
  EXPECT_EQ(trimmed(read_file(d + "/rc.1")), "1");
  EXPECT_FALSE(alive(trimmed(read_file(d + "/pid.0"))));
  EXPECT_FALSE(alive(trimmed(read_file(d + "/pid.1"))));
  run("rm -rf " + d);
}

// BARESGD_TEST_MUNGE=expired: task 1's credential lives 1 s and is sent after 2 s.
TEST_F(SlurmSrunGloo, ExpiredCredentialIsRefusedAndEveryTaskFails) {
  const std::string d = make_temp_dir("srun_gloo_expired");
  write_file(d + "/expire1.sh",
             "#!/bin/bash\n[ \"$SLURM_PROCID\" = 1 ] && export BARESGD_TEST_MUNGE=expired\nexec \"$@\"\n");
  RunResult r = srun(d, 2, "",
                     write_task_script(d) + "bash " + d + "/expire1.sh " + train_cmd() +
                         " --epochs 1 --max-steps 1 --start-timeout 6");
  EXPECT_NE(r.status, 0);
  const std::string err1 = read_file(d + "/err.1");
  EXPECT_EQ(line_count(err1), 1) << err1;
  EXPECT_NE(err1.find("refused this rank's MUNGE credential: MUNGE credential from client 127.0.0.1:"),
            std::string::npos)
      << err1;
  EXPECT_NE(err1.find("is expired"), std::string::npos) << err1;
  EXPECT_EQ(trimmed(read_file(d + "/rc.0")), "1");
  EXPECT_EQ(trimmed(read_file(d + "/rc.1")), "1");
  run("rm -rf " + d);
}

// Writes d/listen.sh: a listener on the job step's first store port (47000 + (job*7919+step) %
// 2000) that accepts and never answers, for at most 40 s; its pid in d/listener.pid. Its stdio
// is not the task's, so srun does not wait for it once the task has ended.
std::string write_listener_script(const std::string& d) {
  write_file(d + "/listen.sh",
             "#!/bin/bash\nport=$((47000 + (SLURM_JOB_ID * 7919 + SLURM_STEP_ID) % 2000))\n"
             "python3 -c 'import socket,sys,time\n"
             "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
             "s.bind((\"127.0.0.1\", int(sys.argv[1]))); s.listen(16); open(sys.argv[2], \"w\").write(\"ready\")\n"
             "time.sleep(40)' $port " +
                 d + "/listener.ready </dev/null >/dev/null 2>&1 & echo $! > " + d +
                 "/listener.pid\n"
                 "for i in $(seq 100); do [ -s " +
                 d + "/listener.ready ] && break; sleep 0.05; done\n");
  return d + "/listen.sh";
}

// Rank 0 is a listener that never answers: task 1 names every host:port it tried within its
// --start-timeout, and srun -K ends the step (the listener included).
TEST_F(SlurmSrunGloo, SilentListenerInRankZerosPlaceIsNamedWithinTheTimeout) {
  const std::string d = make_temp_dir("srun_gloo_silent");
  const std::string listen = write_listener_script(d);
  write_file(d + "/rank0_silent.sh",
             "#!/bin/bash\nif [ \"$SLURM_PROCID\" = 0 ]; then . " + listen + "; wait; exit 0; fi\nexec \"$@\"\n");
  RunResult r = slurm("srun -K -n 2 -e " + d + "/err.%t " + write_task_script(d) + "bash " + d + "/rank0_silent.sh " +
                          train_cmd() + " --epochs 1 --max-steps 1 --start-timeout 4",
                      120);
  EXPECT_NE(r.status, 0);
  const std::string err1 = read_file(d + "/err.1");
  EXPECT_EQ(line_count(err1), 1) << err1;
  EXPECT_NE(err1.find("rank 0's rendezvous store on node localhost (127.0.0.1) did not complete the MUNGE handshake "
                      "within 4000 ms on any port of this job step: localhost:"),
            std::string::npos)
      << err1;
  EXPECT_NE(err1.find(" (connected, but no greeting), localhost:"), std::string::npos) << err1;
  EXPECT_NE(err1.find("(Connection refused)"), std::string::npos) << err1;
  EXPECT_EQ(trimmed(read_file(d + "/rc.1")), "1");
  RunResult gone = run("for i in $(seq 100); do kill -0 $(cat " + d +
                           "/listener.pid) 2>/dev/null || exit 0; sleep 0.1; "
                           "done; exit 1",
                       30);
  EXPECT_EQ(gone.status, 0) << "the listener outlived the step";
  run("rm -rf " + d);
}

// A listener of someone else sits on the step's first port: rank 0 binds the next one and the
// other ranks pass the silent port over. The job trains as usual.
TEST_F(SlurmSrunGloo, SilentListenerOnTheFirstPortIsPassedOver) {
  const std::string d = make_temp_dir("srun_gloo_squatter");
  const std::string listen = write_listener_script(d);
  write_file(d + "/rank0_squat.sh", "#!/bin/bash\n[ \"$SLURM_PROCID\" = 0 ] && . " + listen + "\n\"$@\"\n");
  RunResult r = srun(d, 2, "",
                     write_task_script(d) + "bash " + d + "/rank0_squat.sh " + train_cmd() +
                         " --epochs 1 --max-steps 2 --dump-params " + d + "/p.%r");
  ASSERT_EQ(r.status, 0) << r.out << r.err << read_file(d + "/err.0") << read_file(d + "/err.1");
  EXPECT_EQ(read_file(d + "/listener.ready"), "ready");
  EXPECT_EQ(read_file(d + "/p.0").size(), 21840u * 4);
  EXPECT_TRUE(read_file(d + "/p.0") == read_file(d + "/p.1"));
  run("kill $(cat " + d + "/listener.pid) 2>/dev/null; rm -rf " + d);
}

// A rogue "store" on 127.0.0.1 that greets like ours and answers every client's credential with
// reply(client frame) instead of a credential of its own for this connection.
class RogueStore {
 public:
  explicit RogueStore(std::string (*reply)(const std::string& client_frame, const std::string& socket),
                      std::string socket)
      : reply_(reply), socket_(std::move(socket)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 8);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~RogueStore() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int answered() const { return answered_; }

 private:
  static bool read_frame(int fd, std::string* body) {
    char head[4];
    if (::recv(fd, head, 4, MSG_WAITALL) != 4) return false;
    body->resize(get_u32be(head));
    return body->empty() || ::recv(fd, &(*body)[0], body->size(), MSG_WAITALL) == static_cast<ssize_t>(body->size());
  }
  void serve() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      const std::string greeting = encode_frame(std::string(kStoreMungeGreeting) + std::string(64, 'a'));
      std::string hello;
      if (::send(c, greeting.data(), greeting.size(), MSG_NOSIGNAL) > 0 && read_frame(c, &hello)) {
        const std::string answer = encode_frame("OK " + reply_(hello, socket_));
        ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        ++answered_;
        char b;
        ::recv(c, &b, 1, 0);  // until the client closes
      }
      ::close(c);
    }
  }
  std::string (*reply_)(const std::string&, const std::string&);
  std::string socket_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

std::string client_error(const RogueStore& rogue, const std::string& step) {
  MungeStoreTarget t{
      "localhost", "127.0.0.1", {rogue.port()}, step, SlurmClusterFixture::dir() + "/munge/munge.socket.2"};
  std::string where;
  try {
    ::close(munge_store_connect(t, std::chrono::milliseconds(3000), &where));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(admitted by the rogue store at " + where + ")";
}

// The client's own credential sent back (munged decodes it for the first time, so it is no
// replay): refused because its payload is a client's hello, not a server's reply.
TEST_F(SlurmSrunGloo, RogueStoreReflectingTheClientsCredentialIsRefused) {
  RogueStore rogue([](const std::string& hello, const std::string&) { return hello.substr(64); },
                   dir() + "/munge/munge.socket.2");
  const std::string msg = client_error(rogue, munge_step_payload("5", "0"));
  EXPECT_GE(rogue.answered(), 1);
  EXPECT_NE(msg.find("did not complete the MUNGE handshake within 3000 ms on any port of this job step: localhost:" +
                     std::to_string(rogue.port()) +
                     " (MUNGE credential from store server localhost:" + std::to_string(rogue.port())),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(" client-hello server-nonce=" + std::string(64, 'a')), std::string::npos) << msg;
  EXPECT_NE(msg.find(", not this job step (baresgd-store job=5 step=0 server-reply client-nonce="), std::string::npos)
      << msg;
}

// A genuine credential of this uid, but for another connection (another client nonce): relayed.
TEST_F(SlurmSrunGloo, RogueStoreAnsweringWithAnotherConnectionsCredentialIsRefused) {
  RogueStore rogue(
      [](const std::string&, const std::string& socket) {
        return munge_encode_payload(munge_server_payload(munge_step_payload("5", "0"), std::string(64, 'b')), socket);
      },
      dir() + "/munge/munge.socket.2");
  const std::string msg = client_error(rogue, munge_step_payload("5", "0"));
  EXPECT_GE(rogue.answered(), 1);
  EXPECT_NE(msg.find("is for baresgd-store job=5 step=0 server-reply client-nonce=" + std::string(64, 'b') +
                     ", not this job step"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

}  // namespace
