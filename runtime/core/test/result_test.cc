#include "runtime/core/result.h"

#include <gtest/gtest.h>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

Result<int> half_of(int x) {
  EMBER_CHECK_OR_RETURN_ERROR(x % 2 == 0, InvalidArgument, "%d is odd", x);
  return x / 2;
}

Result<int> quarter_of(int x) {
  EMBER_TRY_ASSIGN(h, half_of(x));
  EMBER_TRY_ASSIGN(q, half_of(h));
  return q;
}

Error check_positive(int x) {
  EMBER_CHECK_OR_RETURN_ERROR(x > 0, InvalidArgument, "%d is not positive", x);
  return Error::Ok;
}

Error both_positive(int a, int b) {
  EMBER_TRY(check_positive(a));
  EMBER_TRY(check_positive(b));
  return Error::Ok;
}

TEST(Result, ValueAndError) {
  Result<int> ok = half_of(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  Result<int> bad = half_of(7);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "7 is odd");
}

TEST(Result, PropagatesThroughTryAssign) {
  EXPECT_EQ(*quarter_of(12), 3);
  testing::clear_log();
  Result<int> r = quarter_of(6);  // 6 -> 3 -> odd
  EXPECT_EQ(r.error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "3 is odd");
}

TEST(Result, TryOnErrors) {
  EXPECT_EQ(both_positive(1, 2), Error::Ok);
  EXPECT_EQ(both_positive(1, -5), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "-5 is not positive");
}

TEST(Result, OkErrorWithoutValueBecomesInternal) {
  Result<int> r(Error::Ok);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::Internal);
}

}  // namespace
}  // namespace ember
