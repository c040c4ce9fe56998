// store_munge: munge_encode/munge_decode wrapped into strings and a DecodedCredential.
#include "comm/store_munge.h"

#include <stdexcept>

#ifdef BARESGD_HAVE_MUNGE
#include <munge.h>

#include <cstdlib>
#include <string>

namespace {

const char* kDefaultSocket = "/run/munge/munge.socket.2";

MungeStatus status_of(munge_err_t e) {
  switch (e) {
    case EMUNGE_SUCCESS:
      return MungeStatus::kOk;
    case EMUNGE_CRED_EXPIRED:
      return MungeStatus::kExpired;
    case EMUNGE_CRED_REPLAYED:
      return MungeStatus::kReplayed;
    case EMUNGE_CRED_REWOUND:
      return MungeStatus::kRewound;
    case EMUNGE_CRED_INVALID:
      return MungeStatus::kInvalid;
    case EMUNGE_SOCKET:
      return MungeStatus::kSocket;
    default:
      return MungeStatus::kOther;
  }
}

// A context pointed at socket; the caller destroys it.
munge_ctx_t context_for(const std::string& socket) {
  munge_ctx_t ctx = munge_ctx_create();
  if (ctx == nullptr) throw std::runtime_error("MUNGE: cannot create a context (out of memory)");
  if (!socket.empty() && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS) {
    munge_ctx_destroy(ctx);
    throw std::runtime_error("MUNGE: cannot use socket " + socket);
  }
  return ctx;
}

std::string socket_name(const std::string& socket) { return socket.empty() ? kDefaultSocket : socket; }

}  // namespace

bool munge_available() { return true; }

std::string munge_encode_payload(const std::string& payload, const std::string& socket, int ttl_s) {
  munge_ctx_t ctx = context_for(socket);
  if (ttl_s > 0 && munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS) {
    munge_ctx_destroy(ctx);
    throw std::runtime_error("MUNGE: cannot set a credential time-to-live of " + std::to_string(ttl_s) + " s");
  }
  char* cred = nullptr;
  munge_err_t e = munge_encode(&cred, ctx, payload.data(), static_cast<int>(payload.size()));
  std::string why = e == EMUNGE_SUCCESS ? "" : munge_ctx_strerror(ctx);
  munge_ctx_destroy(ctx);
  if (e != EMUNGE_SUCCESS) {
    throw std::runtime_error(
        "MUNGE: cannot make a credential with munged at socket " + socket_name(socket) + ": " + why +
        (socket.empty() ? " (BARESGD_MUNGE_SOCKET names munged's socket when it is elsewhere)" : ""));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

DecodedCredential munge_decode_credential(const std::string& cred, const std::string& socket) {
  munge_ctx_t ctx = context_for(socket);
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t e = munge_decode(cred.c_str(), ctx, &buf, &len, &uid, &gid);
  DecodedCredential out;
  out.status = status_of(e);
  if (e != EMUNGE_SUCCESS) {
    const char* s = munge_ctx_strerror(ctx);
    out.status_text = s != nullptr ? s : munge_strerror(e);
    if (e == EMUNGE_SOCKET) out.status_text += " (socket " + socket_name(socket) + ")";
  }
  out.uid = uid;
  if (buf != nullptr) out.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
  std::free(buf);
  munge_ctx_destroy(ctx);
  return out;
}

#else

bool munge_available() { return false; }

std::string munge_encode_payload(const std::string&, const std::string&, int) {
  throw std::runtime_error("MUNGE: this build has no libmunge (install libmunge-dev and rebuild)");
}

DecodedCredential munge_decode_credential(const std::string&, const std::string&) {
  throw std::runtime_error("MUNGE: this build has no libmunge (install libmunge-dev and rebuild)");
}

#endif
