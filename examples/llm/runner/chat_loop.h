// llm_runner --chat: an interactive conversation over one session (examples/llm/session.h).
//
// Each line read is a user turn. The whole conversation is rendered by the chat template and encoded
// (chat_prompt.h); the session keeps the tokens it has already prefilled, so a turn appends only the rendered
// prompt's ids after the longest common prefix with them (rewinding first when the template wrote earlier text
// differently this time, or when the reply's text encodes to other ids than those generated). The reply is
// generated token by token into the same session, written to stdout as it comes, and added to the conversation.
//
// A line holding only a command: /reset (a new conversation: the system message only), /save FILE (the session
// to FILE by Session::save, the messages to FILE.messages.json), /load FILE (both back, checked against the
// program), /quit. End of input ends the chat.
#pragma once

#include <stdint.h>
#include <stdio.h>

#include <vector>

#include "examples/llm/chat/chat_template.h"
#include "examples/llm/decoder_program.h"
#include "examples/llm/grammar/constraint.h"
#include "examples/llm/sampler.h"
#include "examples/llm/tokenizer/tokenizer.h"

namespace ember {
namespace llm {

struct ChatLoopOptions {
  const char* system = nullptr;  // the system message of every conversation, or none
  long max_new_tokens = 128;  // per reply
  bool sliding_window = false;  // when the context is full: slide (SessionOptions::kSlidingWindow), else refuse
  int32_t bos_id = -1;  // put before the plain template's text (encode_chat); < 0: none
  std::vector<int64_t> eos;  // a reply ends at any of these
};

// What the chat needs, borrowed. `constraint` (may be null): each reply is constrained by it from its start.
struct ChatLoopParts {
  DecoderProgram* program;
  const Tokenizer* tokenizer;
  const ChatTemplate* chat_template;
  Sampler* sampler;
  GrammarConstraint* constraint;
  const TokenVocabulary* vocab;
};

// Runs the chat until /quit or end of `in`; replies to `out`, prompts and errors to stderr. Errors in a turn
// (context full, a refused template, a file that does not load) are reported and the chat goes on with the
// conversation as it was before the turn. Returns the exit code: 0, or 5 when execution failed.
int run_chat(const ChatLoopParts& parts, const ChatLoopOptions& options, FILE* in, FILE* out);

}  // namespace llm
}  // namespace ember
