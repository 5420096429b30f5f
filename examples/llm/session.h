// A conversation over a DecoderProgram: its tokens and its own KV cache. Several sessions share one program (its
// mapped weights, its forward method and that method's activations); each costs exactly its KV bytes
// (DecoderMemory::session_bytes, from MethodMeta). The exporter plans forward's KV cache in a pool of its own
// (get_session_memory_id), and a session running binds its own copy of that pool to the method (Method::bind_pool):
// a pointer switch, no copy. Sessions take turns on the program's slots (its loaded copies of forward, each with
// its own activations), one call at a time per slot.
//
//   auto s = (*program)->new_session();
//   auto logits = (*s)->append(prompt, n);      // prefills only the tokens after position()
//   (*s)->rewind(k);                            // forget tokens k.. (their cache rows are overwritten later)
//   auto copy = (*s)->fork();                   // its own KV bytes and history, continued independently
//   (*s)->save("chat.session");                 // program->restore_session("chat.session") brings it back
//
// A session's state after any sequence of calls depends only on the tokens and how they were split into
// append calls: a restored, forked or rewound session continues bit for bit as one fed the same calls. (One
// prefill of 20 tokens and two of 10 give the same bits with 8da4w's integer sums; fp32 ones can differ in the
// last bit, as the blocked linears' multi-token tiles sum in another order.)
//
// A program exported before sessions (no get_session_memory_id: its KV cache shares the activations' pool) runs
// one session over the method's own memory; a second one, fork and save are refused (NotSupported, by name).
// A program loaded with one slot and its sessions are used from one thread at a time; with several slots
// (DecoderProgram::load), as many sessions run at once from different threads, each session itself used by one
// thread at a time.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "examples/llm/aligned_buffer.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace ember {
namespace llm {

class DecoderProgram;

struct SessionOptions {
  // What append does when the tokens would pass max_seq_len.
  enum class ContextFull {
    // OutOfResources, naming the counts; nothing changes.
    kError,
    // Keep the first `sink_tokens` tokens (attention sinks) and the most recent ones, up to half the remaining
    // context, and prefill the recent ones again after the sinks (whose cache rows stay): the session then holds
    // what a session fed those tokens would, at positions 0 .. k - 1. Costs one prefill of up to
    // (max_seq_len - sink_tokens) / 2 tokens per slide, one slide per about that many tokens appended.
    kSlidingWindow,
  };
  ContextFull context_full = ContextFull::kError;
  size_t sink_tokens = 4;
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Prefills tokens[0 .. n) at positions position() .. position() + n - 1 (the earlier ones are not computed again)
  // and returns the last one's vocab_size logits, valid until the next call on any session of the program (of
  // this session, for a program loaded with several slots).
  // InvalidArgument when n is 0 or a token is outside the vocabulary; OutOfResources ("context full") when the
  // tokens would pass max_seq_len under ContextFull::kError, or n alone leaves no room under kSlidingWindow. On
  // an error the session is as it was (its tokens; cache rows past them are never read).
  Result<const float*> append(const int64_t* tokens, size_t n);
  // Forgets the tokens from `position` on (0 .. position()): the next append writes from there.
  Error rewind(size_t position);
  size_t position() const { return tokens_.size(); }
  const std::vector<int64_t>& tokens() const { return tokens_; }
  // Times the window slid (ContextFull::kSlidingWindow).
  size_t slides() const { return slides_; }
  const SessionOptions& options() const { return options_; }
  const DecoderProgram& program() const { return *program_; }

  // A new session with a copy of this one's tokens and the KV bytes of their rows.
  Result<std::unique_ptr<Session>> fork() const;
  // Writes the session to `path` (examples/llm/session_file.h): the program's fingerprint, the tokens and the KV
  // bytes of their rows (live_state). DecoderProgram::restore_session reads it back.
  Error save(const char* path) const;
  // The session pool's bytes (0 for a program exported before sessions); rows past position() are unspecified.
  size_t state_bytes() const { return kv_ ? kv_bytes_ : 0; }
  // The KV bytes of the cache rows 0 .. position() - 1, buffer after buffer: what fork copies and save writes.
  std::vector<uint8_t> live_state() const;

 private:
  friend class DecoderProgram;
  friend class PrefixCache;  // sets a fork's options
  Session(DecoderProgram* program, AlignedBuffer kv, size_t kv_bytes, const SessionOptions& options);
  Error make_room(size_t n);
  Result<const float*> run(const int64_t* tokens, size_t n);

  DecoderProgram* program_;
  AlignedBuffer kv_;  // null: the method's own memory (a program exported before sessions)
  size_t kv_bytes_;
  SessionOptions options_;
  std::vector<int64_t> tokens_;
  size_t slides_ = 0;
  std::vector<float> logits_;  // the last append's, kept when the program has several slots
};

}  // namespace llm
}  // namespace ember
