// Sessions that begin with the same tokens (a system prompt) start from one prefill of them: the cache keeps a
// few sessions' states, and a prompt that begins with one's tokens forks it and prefills only the rest.
//
//   PrefixCache cache(program, /*max_entries=*/4);
//   cache.add(system_prompt, n);                                   // prefilled once
//   auto s = cache.start(prompt, m, &logits, &reused);             // reused == n when prompt begins with it
//
// Bounded: at most max_entries states, each costing DecoderMemory::session_bytes plus its tokens and one row of
// logits (vocab_size floats); adding to a full cache drops the least recently used entry. The program must
// outlive the cache.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "examples/llm/session.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {

class PrefixCache {
 public:
  PrefixCache(DecoderProgram* program, size_t max_entries) : program_(program), max_entries_(max_entries) {}

  // Prefills `prefix` in a session of its own and keeps it, with its last position's logits (an entry with the same
  // tokens is replaced). The session's errors (InvalidArgument for a bad token, OutOfResources past the context).
  Error add(const int64_t* prefix, size_t n);

  // A session holding `prompt` (n > 0): a fork of the entry whose tokens are the longest prefix of it, which then
  // prefills only the rest, or a new session that prefills it all. *logits: its last position's logits (an
  // entry's own copy when the prompt is exactly its tokens; otherwise valid until the program's next call);
  // *reused: the tokens taken from the cache (0 on a miss).
  Result<std::unique_ptr<Session>> start(const int64_t* prompt, size_t n, const float** logits, size_t* reused,
                                         const SessionOptions& options = SessionOptions());

  size_t size() const { return entries_.size(); }
  // Bytes the entries hold: KV bytes, tokens and logits.
  size_t bytes() const;

 private:
  struct Entry {
    std::unique_ptr<Session> session;
    std::vector<float> logits;
    uint64_t last_use;
  };
  DecoderProgram* program_;
  size_t max_entries_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace llm
}  // namespace ember
