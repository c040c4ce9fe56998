// fuzz_gather_reply: libFuzzer target for the rendezvous store's gather reply decoder
// (parse_gather_reply, comm/store_protocol.h), which a rank runs on what the store sends.
//
// Input: the bytes as a reply body.
// Contract checked: no read past the body; on true, an 'N' reply has no entries and an 'F' reply
// has exactly *count entries whose encoding (encode_gather_found) is the body itself, byte for byte;
// on false the entries are empty. Every entry a well-formed body can hold takes at least 8 bytes,
// so the count never exceeds size / 8.
//
// Build: make fuzz (build-fuzz/fuzz_gather_reply); run: .ci/fuzz.sh
#include <cstdint>
#include <string>

#include "comm/store_protocol.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  GatheredKeys entries = {{"stale", "entry"}};
  uint32_t count = 7;
  if (!parse_gather_reply(body.data(), body.size(), &entries, &count)) {
    FUZZ_CHECK(entries.empty());
    return 0;
  }
  FUZZ_CHECK(size >= 5);
  if (body[0] == 'N') {
    FUZZ_CHECK(entries.empty() && size == 5);
    return 0;
  }
  FUZZ_CHECK(body[0] == 'F');
  FUZZ_CHECK(entries.size() == count && count <= size / 8);
  FUZZ_CHECK(encode_gather_found(entries) == body);
  return 0;
}
