#include "examples/llm/prompt_lookup.h"

namespace ember {
namespace llm {
namespace {

// Whether context[end - n .. end) equals the context's last n tokens.
bool suffix_matches_at(const int64_t* context, size_t length, size_t end, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (context[end - n + i] != context[length - n + i]) return false;
  }
  return true;
}

}  // namespace

size_t prompt_lookup(const int64_t* context, size_t length, size_t max_draft, std::vector<int64_t>* draft) {
  draft->clear();
  if (max_draft == 0) return 0;
  for (size_t n = kPromptLookupMaxNgram; n >= 1; --n) {
    if (length < n + 1) continue;
    // Latest first: the nearest repetition is the likeliest to continue the same way. `end` is one past the
    // occurrence; end < length keeps the suffix itself out and leaves at least one token to draft.
    for (size_t end = length - 1; end >= n; --end) {
      if (!suffix_matches_at(context, length, end, n)) continue;
      // What followed, copied as an LZ77 match: an occurrence p = length - end tokens back repeats with period p,
      // so past the context's end the draft continues from its own tokens (a run of one token, repeated, drafts
      // max_draft of it rather than one).
      const size_t period = length - end;
      for (size_t i = 0; i < max_draft; ++i) {
        draft->push_back(end + i < length ? context[end + i] : (*draft)[i - period]);
      }
      return n;
    }
  }
  return 0;
}

}  // namespace llm
}  // namespace ember
