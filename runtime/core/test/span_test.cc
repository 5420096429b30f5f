#include "runtime/core/span.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(Span, ViewsAndWrites) {
  int data[4] = {1, 2, 3, 4};
  Span<int> s(data);
  ASSERT_EQ(s.size(), 4u);
  s[2] = 30;
  EXPECT_EQ(data[2], 30);
  int sum = 0;
  for (int v : s) sum += v;
  EXPECT_EQ(sum, 1 + 2 + 30 + 4);
}

TEST(ArrayRef, ReadOnlyViewsCompare) {
  const int64_t a[3] = {1, 2, 3};
  const int64_t b[3] = {1, 2, 3};
  const int64_t c[2] = {1, 2};
  EXPECT_TRUE(ArrayRef<int64_t>(a).equals(ArrayRef<int64_t>(b)));
  EXPECT_FALSE(ArrayRef<int64_t>(a).equals(ArrayRef<int64_t>(c)));
  EXPECT_EQ(ArrayRef<int64_t>(a).back(), 3);
  EXPECT_TRUE(ArrayRef<int64_t>().empty());
}

}  // namespace
}  // namespace ember
