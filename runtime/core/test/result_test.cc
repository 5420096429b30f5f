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

// EMBER_TRY on a Result whose value the caller does not need.
Error is_even(int x) {
  EMBER_TRY(half_of(x));
  return Error::Ok;
}

struct MoveOnly {
  explicit MoveOnly(int v) : value(v) {}
  MoveOnly(MoveOnly&& other) : value(other.value) { other.value = -1; }
  MoveOnly(const MoveOnly&) = delete;
  int value;
};

Result<MoveOnly> make_move_only(int v) {
  EMBER_CHECK_OR_RETURN_ERROR(v >= 0, OutOfResources, "cannot make %d", v);
  return MoveOnly(v);
}

Result<int> unwrap_move_only(int v) {
  EMBER_TRY_ASSIGN(m, make_move_only(v));
  return m.value;
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

TEST(Result, TryOnResults) {
  EXPECT_EQ(is_even(4), Error::Ok);
  EXPECT_EQ(is_even(5), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "5 is odd");
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<MoveOnly> r = make_move_only(3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->value, 3);
  Result<MoveOnly> moved(std::move(r));
  EXPECT_EQ(moved->value, 3);
  EXPECT_EQ(*unwrap_move_only(9), 9);
  EXPECT_EQ(unwrap_move_only(-2).error(), Error::OutOfResources);
  EXPECT_EQ(testing::last_log(), "cannot make -2");
}

TEST(Result, OkErrorWithoutValueBecomesInternal) {
  Result<int> r(Error::Ok);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::Internal);
}

}  // namespace
}  // namespace ember
