// The fixed-point primitives of util/requantize.h against exact arithmetic (int64/__int128 and long double):
// the Q31 representation of multipliers, each rounding step's tie rule, saturation, and the lifted multiply's
// agreement with round(x * M).
#include "kernels/quantized/util/requantize.h"

#include <math.h>

#include <random>

#include <gtest/gtest.h>

namespace ember {
namespace quantized {
namespace {

long double value_of(const QuantizedMultiplier& m) {
  return ldexpl(static_cast<long double>(m.multiplier), m.shift - 31);
}

TEST(QuantizeMultiplier, RepresentsTheRealMultiplierToQ31Precision) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-30.0, 29.0);
  for (int i = 0; i < 20000; ++i) {
    const double m = pow(2.0, exponent(rng));
    QuantizedMultiplier q;
    ASSERT_TRUE(quantize_multiplier(m, &q)) << m;
    ASSERT_GE(q.multiplier, int32_t{1} << 30) << m;  // normalized: the full 31 bits carry precision
    // Rounding the fraction to 31 bits: relative error at most 2^-31.
    EXPECT_LE(fabsl(value_of(q) - m) / m, ldexpl(1.0L, -31)) << m;
  }
}

TEST(QuantizeMultiplier, EdgeCases) {
  QuantizedMultiplier q;
  ASSERT_TRUE(quantize_multiplier(0.5, &q));
  EXPECT_EQ(q.multiplier, int32_t{1} << 30);
  EXPECT_EQ(q.shift, 0);
  ASSERT_TRUE(quantize_multiplier(1.0, &q));
  EXPECT_EQ(q.multiplier, int32_t{1} << 30);
  EXPECT_EQ(q.shift, 1);
  // A fraction that rounds up to 1.0 moves to the next power instead of leaving the Q31 range.
  ASSERT_TRUE(quantize_multiplier(nextafter(1.0, 0.0), &q));
  EXPECT_EQ(q.multiplier, int32_t{1} << 30);
  EXPECT_EQ(q.shift, 1);
  // Too small to matter: exactly zero, so every product is 0.
  ASSERT_TRUE(quantize_multiplier(1e-12, &q));
  EXPECT_EQ(q.multiplier, 0);
  EXPECT_EQ(multiply_by_quantized_multiplier(INT32_MAX, q), 0);
  // Not a multiplier at all.
  EXPECT_FALSE(quantize_multiplier(0.0, &q));
  EXPECT_FALSE(quantize_multiplier(-0.25, &q));
  EXPECT_FALSE(quantize_multiplier(NAN, &q));
  EXPECT_FALSE(quantize_multiplier(INFINITY, &q));
  EXPECT_FALSE(quantize_multiplier(ldexp(1.0, 31), &q));
}

TEST(RoundingPrimitives, TieRules) {
  // The final shift: ties away from zero.
  // x / 2: 5/2 = 2.5 -> 3, -5/2 -> -3, 3/2 -> 2, -3/2 -> -2, -1/2 -> -1.
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);
  EXPECT_EQ(rounding_divide_by_pot(3, 1), 2);
  EXPECT_EQ(rounding_divide_by_pot(-3, 1), -2);
  EXPECT_EQ(rounding_divide_by_pot(-1, 1), -1);
  EXPECT_EQ(rounding_divide_by_pot(-7, 2), -2);  // -1.75
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5
  EXPECT_EQ(rounding_divide_by_pot(-5, 2), -1);  // -1.25
  EXPECT_EQ(rounding_divide_by_pot(INT32_MIN, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot(INT32_MAX, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot(12345, 0), 12345);
  // The pools' final shift: exact ties to even, everything else to nearest.
  EXPECT_EQ(rounding_divide_by_pot_half_even(5, 1), 2);    // 2.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(7, 1), 4);    // 3.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(-5, 1), -2);  // -2.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(-7, 1), -4);  // -3.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(-1, 1), 0);   // -0.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(-6, 2), -2);  // -1.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(-7, 2), -2);  // -1.75
  EXPECT_EQ(rounding_divide_by_pot_half_even(-5, 2), -1);  // -1.25
  EXPECT_EQ(rounding_divide_by_pot_half_even(10, 2), 2);   // 2.5
  EXPECT_EQ(rounding_divide_by_pot_half_even(INT32_MIN, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot_half_even(INT32_MAX, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot_half_even(12345, 0), 12345);
  // The high multiply (q = 2^30 is 0.5, so this is x / 2): ties toward +infinity, as gemmlowp's.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(5, int32_t{1} << 30), 3);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-5, int32_t{1} << 30), -2);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-7, int32_t{1} << 30), -3);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, int32_t{1} << 30), 0);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN), INT32_MAX);
}

TEST(RoundingPrimitives, MatchExactArithmetic) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  for (int i = 0; i < 200000; ++i) {
    int32_t a = any(rng), b = any(rng);
    // Every fourth pair is a tie (b = 2^30 is 0.5, odd a), which random pairs almost never are.
    if (i % 4 == 0) a |= 1, b = int32_t{1} << 30;
    if (a == INT32_MIN && b == INT32_MIN) continue;
    // floor(a * b / 2^31 + 1/2): nearest, ties up, in exact 128-bit arithmetic (>> floors).
    const __int128 p = static_cast<__int128>(a) * b;
    const int32_t want = static_cast<int32_t>((p + (static_cast<__int128>(1) << 30)) >> 31);
    ASSERT_EQ(saturating_rounding_doubling_high_mul(a, b), want) << a << " " << b;
    const int e = static_cast<int>(rng() % 32);
    const int64_t x = a;
    const int64_t half = e == 0 ? 0 : int64_t{1} << (e - 1);
    const int64_t rmag = ((x < 0 ? -x : x) + half) >> e;
    ASSERT_EQ(rounding_divide_by_pot(a, e), static_cast<int32_t>(x < 0 ? -rmag : rmag)) << a << " " << e;
    // Half to even: nearbyint of the exact quotient (long double holds every int32 / 2^e exactly).
    const long double q = ldexpl(static_cast<long double>(a), -e);
    ASSERT_EQ(rounding_divide_by_pot_half_even(a, e), static_cast<int32_t>(nearbyintl(q))) << a << " " << e;
  }
}

TEST(MultiplyByQuantizedMultiplier, LeftShiftsSaturate) {
  QuantizedMultiplier q;
  ASSERT_TRUE(quantize_multiplier(8.0, &q));
  EXPECT_EQ(multiply_by_quantized_multiplier(1000, q), 8000);
  EXPECT_EQ(multiply_by_quantized_multiplier(-1000, q), -8000);
  // Saturated before the high multiply, so the result is INT32_MAX * q / 2^31: not the true product, but far
  // outside every int8 range, which is all the clamp that follows needs.
  EXPECT_GE(multiply_by_quantized_multiplier(INT32_MAX / 2, q), int32_t{1} << 30);
  EXPECT_LE(multiply_by_quantized_multiplier(INT32_MIN / 2, q), -(int32_t{1} << 30));
}

// The lifted multiply with all the headroom a value has rounds like round(x * M) computed exactly, except within
// a hair of a tie (where M's own 31-bit rounding decides); the plain one is off more often for small x.
TEST(MultiplyByQuantizedMultiplier, LiftedAgreesWithExactRounding) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> exponent(-12.0, 0.0);
  std::uniform_int_distribution<int32_t> small(-300000, 300000);
  int lifted_off = 0, plain_off = 0;
  const int trials = 100000;
  for (int i = 0; i < trials; ++i) {
    QuantizedMultiplier q;
    ASSERT_TRUE(quantize_multiplier(pow(2.0, exponent(rng)), &q));
    const int32_t x = small(rng);
    const long double exact = static_cast<long double>(x) * value_of(q);
    const long double want = exact < 0 ? -floorl(-exact + 0.5L) : floorl(exact + 0.5L);
    const int32_t lifted = multiply_by_quantized_multiplier_lifted(x, q, headroom_bits(300000));
    const int32_t plain = multiply_by_quantized_multiplier(x, q);
    ASSERT_LE(fabsl(lifted - want), 1.0L);
    ASSERT_LE(fabsl(plain - want), 1.0L);
    lifted_off += lifted != want;
    plain_off += plain != want;
  }
  EXPECT_LE(lifted_off, trials / 1000) << "lifted: " << lifted_off << ", plain: " << plain_off;
  EXPECT_GT(plain_off, lifted_off);
}

TEST(Headroom, BitsAboveABound) {
  EXPECT_EQ(headroom_bits(INT32_MAX), 0);
  EXPECT_EQ(headroom_bits(int64_t{1} << 30), 0);
  EXPECT_EQ(headroom_bits((int64_t{1} << 30) - 1), 1);
  EXPECT_EQ(headroom_bits(255), 23);
  EXPECT_EQ(headroom_bits(0), 31);
  const int8_t w[4] = {-128, 127, 0, 1};
  EXPECT_EQ(accumulator_headroom(w, 4, -1000), headroom_bits(255 * 256 + 1000));
}

TEST(Requantize, AddsZeroPointAndClampsToTheActivationRange) {
  QuantizedMultiplier q;
  ASSERT_TRUE(quantize_multiplier(0.25, &q));
  EXPECT_EQ(requantize(40, q, 0, -3, -128, 127), 7);
  EXPECT_EQ(requantize(-40, q, 0, -3, -128, 127), -13);
  EXPECT_EQ(requantize(1000, q, 0, 0, -128, 127), 127);
  EXPECT_EQ(requantize(-1000, q, 0, 0, -128, 127), -128);
  EXPECT_EQ(requantize(-40, q, 0, 5, 5, 20), 5);  // a fused relu: nothing below the output zero point
  EXPECT_EQ(requantize(400, q, 0, 5, 5, 20), 20);
  EXPECT_EQ(requantize(INT32_MAX, q, 0, 0, -128, 127), 127);
}

}  // namespace
}  // namespace quantized
}  // namespace ember
