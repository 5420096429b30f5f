// The LLM half of the soak: one session of a decoder program chatting for `steps` decode steps, as a chat
// server's long-lived session does. Turns of a few user tokens, each answered greedily until an EOS token or a
// length drawn from the seed; the context window slides when full (SessionOptions::kSlidingWindow); every few
// turns an answer is regenerated (rewind to the end of the user's tokens) and every few more a new chat starts
// (rewind to the start, the system prompt again). Every so many steps a fresh session replays a fixed reference
// conversation and must produce the same tokens and the same last logits, bit for bit, as the first time: the
// long chat must not have disturbed the program's shared state, and a session's KV bytes come and go each time.
#pragma once

#include <stdint.h>

#include "tests/soak/resource_samples.h"

namespace ember {
namespace soak {

struct LlmOptions {
  const char* path = nullptr;
  uint64_t steps = 0;  // decode steps of the long chat (the reference replays are extra)
  uint64_t sample_every = 1;
  uint64_t check_every = 1000;
  uint64_t seed = 0;
};

// False (with the reason on stderr) when a call fails, a replay differs or `series` finds growth.
bool llm_soak(const LlmOptions& options, SampleSeries* series);

}  // namespace soak
}  // namespace ember
