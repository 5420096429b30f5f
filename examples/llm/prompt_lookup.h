// Drafts for speculative decoding by prompt lookup: the tokens that followed the most recent earlier occurrence of
// the context's last few tokens. No draft model: text that repeats its own prompt (code, quotes, edits, lists of
// names) is predicted by where it appeared before, and the decoder checks every drafted token in one forward call.
//
//   std::vector<int64_t> draft;
//   llm::prompt_lookup(context.data(), context.size(), /*max_draft=*/4, &draft);  // empty: nothing found
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace ember {
namespace llm {

// The longest n-gram tried first: three tokens match a place in the text rather than a common word pair, and
// falling back to two and one still drafts where the three-token suffix is new.
constexpr size_t kPromptLookupMaxNgram = 3;

// Fills *draft (cleared first) with max_draft tokens that followed the latest earlier occurrence of context's last
// n tokens, for n = kPromptLookupMaxNgram down to 1 (the first n with any occurrence wins). An occurrence p tokens
// back whose continuation reaches the context's end repeats with period p (its draft continues from itself, as an
// LZ77 match does). Returns the n that matched, 0 when none (then *draft is empty).
size_t prompt_lookup(const int64_t* context, size_t length, size_t max_draft, std::vector<int64_t>* draft);

}  // namespace llm
}  // namespace ember
