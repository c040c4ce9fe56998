// store_munge: the thin libmunge shell of the MUNGE store handshake (see store_munge_check.h for
// its rules). Built with libmunge when /usr/include/munge.h exists (BARESGD_HAVE_MUNGE); without
// it munge_available() is false and both calls throw saying so.
#pragma once
#include <string>

#include "comm/store_munge_check.h"

bool munge_available();
// A credential carrying payload, from munged at socket (empty: the default socket), valid for
// ttl_s seconds (0: munged's default). Throws std::runtime_error naming the socket when munged
// cannot be reached.
std::string munge_encode_payload(const std::string& payload, const std::string& socket, int ttl_s = 0);
// Decodes cred; never throws on a bad credential (that is the status), only if unavailable.
DecodedCredential munge_decode_credential(const std::string& cred, const std::string& socket);
