// softmax's arithmetic (util/softmax_table.h) against long double: the table of e^(-s d), the per-row multiplier
// 1 / (output_scale * sum), and the tie rule of the final rounding.
#include "kernels/quantized/util/softmax_table.h"

#include <math.h>

#include <random>

#include <gtest/gtest.h>

namespace ember {
namespace quantized {
namespace {

long double multiplier_value(const RequantSteps& s) {
  return ldexpl(static_cast<long double>(s.multiplier), s.left - 31 - s.right);
}

SoftmaxState state_for(double output_scale, int32_t zero_point) {
  SoftmaxState s{};
  QuantizedMultiplier m;
  EXPECT_TRUE(quantize_multiplier(1.0 / output_scale, &m));
  s.prepared = kSoftmaxPrepared;
  s.output_multiplier = m.multiplier;
  s.output_shift = m.shift;
  s.output_zero_point = zero_point;
  return s;
}

TEST(SoftmaxTable, EntriesAreTheExponentialsRounded) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> log_scale(logl(1e-4), logl(40.0));
  int32_t table[kSoftmaxTableSize];
  for (int i = 0; i < 400; ++i) {
    const double s = exp(log_scale(rng));
    softmax_fill_table(s, table);
    ASSERT_EQ(table[0], int32_t{1} << kSoftmaxTableBits) << s;
    for (int d = 0; d < kSoftmaxTableSize; ++d) {
      const long double exact = ldexpl(expl(-static_cast<long double>(s) * d), kSoftmaxTableBits);
      // Half a unit from the final rounding, and a hair for the double arithmetic before it.
      ASSERT_LE(fabsl(table[d] - exact), 0.5L + 1e-3L) << "scale " << s << " d " << d;
      if (d > 0) {
        ASSERT_LE(table[d], table[d - 1]);
      }
    }
  }
}

TEST(SoftmaxRowSteps, MultiplierIsTheReciprocalOfTheScaledSum) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> log_scale(logl(1e-5), logl(0.5));
  std::uniform_int_distribution<int64_t> sum_at(int64_t{1} << kSoftmaxTableBits, int64_t{1} << 44);
  for (int i = 0; i < 20000; ++i) {
    const double output_scale = i % 3 == 0 ? 1.0 / 256.0 : exp(log_scale(rng));
    const SoftmaxState state = state_for(output_scale, -128);
    const int64_t sum = sum_at(rng);
    const RequantSteps steps = softmax_row_steps(state, sum);
    ASSERT_EQ(steps.left, 0);
    ASSERT_GE(steps.right, 1);
    ASSERT_LE(steps.right, 31);
    const long double want = 1.0L / (static_cast<long double>(output_scale) * sum);
    if (steps.multiplier == 0) {
      // Too small for 31 bits of right shift: then even the largest entry is under a quarter step from 0.
      EXPECT_LT(want * ldexpl(1.0L, kSoftmaxTableBits), 0.25L) << output_scale << " " << sum;
      continue;
    }
    // The float division's 24 bits, the sum rounded to 31, the output scale's Q31 multiplier.
    EXPECT_LE(fabsl(multiplier_value(steps) - want) / want, ldexpl(1.0L, -22)) << output_scale << " " << sum;
  }
}

TEST(SoftmaxRowSteps, PowerOfTwoSumsAreExact) {
  const SoftmaxState state = state_for(1.0 / 256.0, -128);
  // 256 / 2^k as 2^30 * 2^(-31 - right): representable while right = k - 9 <= 31.
  for (int k = kSoftmaxTableBits; k <= 40; ++k) {
    EXPECT_EQ(multiplier_value(softmax_row_steps(state, int64_t{1} << k)), ldexpl(1.0L, 8 - k)) << k;
  }
}

TEST(SoftmaxOne, IsTheSharedRequantizationWithTheRowsInvariants) {
  // softmax_one's 32-bit form against the general three steps (util/requantize.h) it stands for.
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> log_scale(logl(1e-5), logl(0.5));
  std::uniform_int_distribution<int64_t> sum_at(int64_t{1} << kSoftmaxTableBits, int64_t{1} << 42);
  std::uniform_int_distribution<int32_t> entry_at(0, int32_t{1} << kSoftmaxTableBits);
  std::uniform_int_distribution<int32_t> zero_point_at(-128, 127);
  for (int i = 0; i < 20000; ++i) {
    const SoftmaxState state = state_for(i % 2 == 0 ? 1.0 / 256.0 : exp(log_scale(rng)), zero_point_at(rng));
    const RequantSteps steps = softmax_row_steps(state, sum_at(rng));
    for (int k = 0; k < 16; ++k) {
      // Entries near a tie too: a multiple of a large power of two lands on exact halves more often.
      const int32_t entry = k % 4 == 0 ? entry_at(rng) & ~((int32_t{1} << 20) - 1) : entry_at(rng);
      const int8_t general =
          clamp_to_int8(int64_t{apply_requant_steps<true>(entry, steps)} + state.output_zero_point, -128, 127);
      ASSERT_EQ(softmax_one(entry, steps, state.output_zero_point), general) << entry;
    }
  }
}

TEST(SoftmaxOne, ExactTiesGoToEven) {
  const SoftmaxState state = state_for(1.0 / 256.0, -128);
  const int32_t one = int32_t{1} << kSoftmaxTableBits;
  // n equal values: each is 256 / n steps. 512 values: exactly half a step, to even (0); 256 / 3 is 85.33.
  EXPECT_EQ(softmax_one(one, softmax_row_steps(state, int64_t{512} * one), -128), -128);
  EXPECT_EQ(softmax_one(one, softmax_row_steps(state, int64_t{3} * one), -128), 85 - 128);
  // Entries of 3 and 5 * 2^28 in a sum of 128 * 2^30: 1.5 and 2.5 steps, both to 2.
  EXPECT_EQ(softmax_one(3 * (one / 4), softmax_row_steps(state, int64_t{128} * one), -128), 2 - 128);
  EXPECT_EQ(softmax_one(5 * (one / 4), softmax_row_steps(state, int64_t{128} * one), -128), 2 - 128);
  // One value: 256 steps, saturated at 127.
  EXPECT_EQ(softmax_one(one, softmax_row_steps(state, one), -128), 127);
}

}  // namespace
}  // namespace quantized
}  // namespace ember
