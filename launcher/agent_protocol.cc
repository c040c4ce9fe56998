// agent_protocol: encoding of the launcher -> agent spawn request and the agent's status lines.
#include "launcher/agent_protocol.h"

#include <sys/wait.h>

#include <climits>
#include <csignal>
#include <cstdlib>

#include "comm/big_endian.h"
#include "src/parse_int.h"

namespace {

void put_str(std::string* out, const std::string& s) {
  append_u32be(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

struct Reader {
  const std::string& b;
  size_t pos = 0;
  bool u32(uint32_t* v) {
    if (b.size() - pos < 4) return false;
    *v = load_u32be(b.data() + pos);
    pos += 4;
    return true;
  }
  bool str(std::string* s) {
    uint32_t n;
    if (!u32(&n) || b.size() - pos < n) return false;
    s->assign(b, pos, n);
    pos += n;
    return true;
  }
  bool integer(long* v, long lo, long hi) {
    std::string s;
    long long x = 0;
    if (!str(&s) || s.size() > 10 || parse_decimal(s, IntSign::kNone, lo, hi, &x) != IntText::kOk) return false;
    *v = static_cast<long>(x);
    return true;
  }
};

}  // namespace

std::string encode_agent_request(const AgentRequest& req) {
  std::string body;
  put_str(&body, req.nonce);
  put_str(&body, std::to_string(req.openblas_local_size));
  put_str(&body, std::to_string(req.env.size()));
  for (const std::string& e : req.env) put_str(&body, e);
  put_str(&body, std::to_string(req.argv.size()));
  for (const std::string& a : req.argv) put_str(&body, a);
  if (req.heartbeat_timeout_ms > 0) {
    put_str(&body, std::to_string(req.heartbeat_timeout_ms));
    put_str(&body, std::to_string(req.heartbeat_interval_ms));
  }
  std::string out = kAgentMagic;
  append_u32be(&out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

bool decode_agent_request(const std::string& body, AgentRequest* req) {
  Reader r{body};
  long n = 0;
  if (!r.str(&req->nonce) || req->nonce.empty()) return false;
  if (!r.integer(&n, 0, 1 << 20)) return false;
  req->openblas_local_size = static_cast<int>(n);
  if (!r.integer(&n, 0, 1 << 20)) return false;
  req->env.clear();
  for (long k = 0; k < n; ++k) {
    std::string e;
    if (!r.str(&e) || e.find('=') == std::string::npos || e[0] == '=' || e.find('\0') != std::string::npos)
      return false;
    req->env.push_back(std::move(e));
  }
  if (!r.integer(&n, 1, 1 << 20)) return false;
  req->argv.clear();
  for (long k = 0; k < n; ++k) {
    std::string a;
    if (!r.str(&a) || a.find('\0') != std::string::npos) return false;
    req->argv.push_back(std::move(a));
  }
  if (req->argv[0].empty()) return false;
  req->heartbeat_timeout_ms = req->heartbeat_interval_ms = 0;
  if (r.pos == body.size()) return true;  // the original frame: no heartbeats
  long timeout = 0, interval = 0;
  if (!r.integer(&timeout, 1, kMaxHeartbeatMs) || !r.integer(&interval, 1, timeout - 1 < 1 ? 1 : timeout - 1) ||
      interval >= timeout)
    return false;
  req->heartbeat_timeout_ms = timeout;
  req->heartbeat_interval_ms = interval;
  return r.pos == body.size();
}

char agent_control_byte(int sig) {
  switch (sig) {
    case SIGTERM:
      return 'T';
    case SIGINT:
      return 'I';
    case SIGHUP:
      return 'H';
    case SIGKILL:
      return 'K';
    case SIGUSR1:
      return 'U';
    default:
      return 0;
  }
}

int agent_control_signal(char c) {
  switch (c) {
    case 'T':
      return SIGTERM;
    case 'I':
      return SIGINT;
    case 'H':
      return SIGHUP;
    case 'K':
      return SIGKILL;
    case 'U':
      return SIGUSR1;
    default:
      return 0;
  }
}

std::string agent_marker_prefix(const std::string& nonce) { return "@@BSGD-AGENT " + nonce + " "; }

std::string agent_pid_line(const std::string& nonce, long pid) {
  return agent_marker_prefix(nonce) + "pid " + std::to_string(pid) + "\n";
}

std::string agent_status_line(const std::string& nonce, int wait_status) {
  if (WIFSIGNALED(wait_status))
    return agent_marker_prefix(nonce) + "signal " + std::to_string(WTERMSIG(wait_status)) + "\n";
  return agent_marker_prefix(nonce) + "exit " + std::to_string(WEXITSTATUS(wait_status)) + "\n";
}

std::string agent_alive_line(const std::string& nonce, long agent_pid) {
  return agent_marker_prefix(nonce) + "alive " + std::to_string(agent_pid) + "\n";
}

bool parse_agent_marker(const std::string& text, const std::string& nonce, std::string* before, std::string* kind,
                        long* value) {
  std::string prefix = agent_marker_prefix(nonce);
  size_t at = text.rfind(prefix);
  if (at == std::string::npos) return false;
  std::string rest = text.substr(at + prefix.size());
  size_t sp = rest.find(' ');
  if (sp == std::string::npos) return false;
  std::string k = rest.substr(0, sp), v = rest.substr(sp + 1);
  if (k != "pid" && k != "exit" && k != "signal" && k != "alive") return false;
  long long x = 0;
  if (v.size() > 10 || parse_decimal(v, IntSign::kNone, 0, LLONG_MAX, &x) != IntText::kOk) return false;
  *before = text.substr(0, at);
  *kind = k;
  *value = static_cast<long>(x);
  return true;
}
