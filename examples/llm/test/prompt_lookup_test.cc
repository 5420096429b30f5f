// prompt_lookup: which occurrence it drafts from, the n-gram fallback, and periodic continuation.
#include "examples/llm/prompt_lookup.h"

#include <gtest/gtest.h>

#include <vector>

namespace ember {
namespace llm {
namespace {

std::vector<int64_t> lookup(const std::vector<int64_t>& context, size_t max_draft, size_t* n = nullptr) {
  std::vector<int64_t> draft = {-1};  // cleared by the call
  const size_t matched = prompt_lookup(context.data(), context.size(), max_draft, &draft);
  if (n != nullptr) *n = matched;
  return draft;
}

TEST(PromptLookup, DraftsWhatFollowedTheLatestOccurrenceOfTheLastThreeTokens) {
  // "1 2 3" occurs at 0 (then 4 5) and at 6 (then 7 8): the latest wins.
  size_t n = 0;
  EXPECT_EQ(lookup({1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 9, 1, 2, 3}, 2, &n), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(n, 3u);
}

TEST(PromptLookup, ALongerMatchWinsOverALaterShorterOne) {
  // "2 3" is latest at 7 (then 6), but "1 2 3" only at 0 (then 4).
  size_t n = 0;
  EXPECT_EQ(lookup({1, 2, 3, 4, 5, 9, 2, 3, 6, 1, 2, 3}, 1, &n), (std::vector<int64_t>{4}));
  EXPECT_EQ(n, 3u);
}

TEST(PromptLookup, FallsBackToTwoThenOneToken) {
  size_t n = 0;
  EXPECT_EQ(lookup({5, 2, 3, 8, 9, 2, 3}, 2, &n), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(lookup({5, 3, 8, 9, 6, 3}, 3, &n), (std::vector<int64_t>{8, 9, 6}));
  EXPECT_EQ(n, 1u);
}

TEST(PromptLookup, NothingFoundLeavesTheDraftEmpty) {
  size_t n = 7;
  EXPECT_TRUE(lookup({1, 2, 3, 4, 5}, 4, &n).empty());
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(lookup({1}, 4, &n).empty());
  EXPECT_TRUE(lookup({}, 4, &n).empty());
  EXPECT_TRUE(lookup({1, 2, 1, 2}, 0, &n).empty());
  EXPECT_EQ(n, 0u);
}

TEST(PromptLookup, AMatchThatReachesTheEndRepeatsWithItsPeriod) {
  // One token repeated: a period of 1, so the whole draft is that token.
  EXPECT_EQ(lookup({4, 7, 7, 7, 7}, 5), (std::vector<int64_t>(5, 7)));
  // "1 2 3" three tokens back: the draft continues 1 2 3 1 ...
  EXPECT_EQ(lookup({9, 1, 2, 3, 1, 2, 3}, 5), (std::vector<int64_t>{1, 2, 3, 1, 2}));
}

}  // namespace
}  // namespace llm
}  // namespace ember
