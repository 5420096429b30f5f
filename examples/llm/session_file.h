// A session's state on disk: what Session::save writes and DecoderProgram::restore_session reads back. The file
// is untrusted input: every field is checked against the program restoring it before any byte is used, and each
// refusal names the field and the numbers at fault.
//
// Layout, little-endian (version 1):
//   0   8 bytes  magic "EMBRSESS"
//   8   u32      version (1)
//   12  u32      flags (0; anything else is refused)
//   16  u64      program fingerprint (session_fingerprint of the .pte's bytes): a state from another program,
//                or another export of the same model, is refused
//   24  u64      max_seq_len of the program
//   32  u64      n: the session's tokens (its position), at most max_seq_len
//   40  u64      KV bytes: the cache rows of the n tokens (Session::live_state), the program's bytes per row
//                times n (the whole pool, for a program whose pool is not laid out in rows)
//   48  i64 x n  the token ids, each inside the vocabulary
//   ..  KV bytes the rows, buffer after buffer
//   ..  u64      checksum (session_hash) of every byte before it
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "runtime/core/result.h"

namespace ember {
namespace llm {

constexpr size_t kSessionHeaderBytes = 48;

// A 64-bit hash of `bytes` continuing from `h` (start from kSessionHashSeed): the file's checksum and the
// program's fingerprint. Not cryptographic: it catches corruption and a mismatched program, not an attacker who
// rewrites the checksum (whose file still passes every other check, so it can only hold another valid state).
constexpr uint64_t kSessionHashSeed = 0x9e3779b97f4a7c15ull;
uint64_t session_hash(uint64_t h, const void* bytes, size_t n);

// The hash of a whole file (a program's fingerprint). AccessFailed when it cannot be read.
Result<uint64_t> session_fingerprint(const char* path);

struct SessionFileWrite {
  uint64_t fingerprint;
  int64_t max_seq_len;
  const int64_t* tokens;
  size_t n_tokens;
  const uint8_t* kv;
  size_t kv_bytes;
};
// AccessFailed when the file cannot be written whole.
Error write_session_file(const char* path, const SessionFileWrite& s);

// What the restoring program expects.
struct SessionFileExpect {
  uint64_t fingerprint;
  int64_t max_seq_len;
  int64_t vocab_size;
  // KV bytes for n tokens: kv_fixed_bytes + n x kv_bytes_per_token.
  size_t kv_fixed_bytes;
  size_t kv_bytes_per_token;
};
// Reads and checks a session file: the tokens into *tokens and the KV bytes into *kv. AccessFailed when it cannot
// be read; InvalidExternalData, naming the field, when any check fails (then both are left empty).
Error read_session_file(const char* path, const SessionFileExpect& expect, std::vector<int64_t>* tokens,
                        std::vector<uint8_t>* kv);

}  // namespace llm
}  // namespace ember
