// Fixed-point requantization shared by the quantized kernels: a real multiplier M (for conv and linear
// M = input_scale * weight_scale[oc] / output_scale) is represented as a Q31 integer q in [2^30, 2^31) and a
// power-of-two exponent, M = q * 2^(shift - 31), so the kernels' inner loops stay in int32/int64 arithmetic and
// give the same bits on every target (no FPU needed, no dependence on how a compiler contracts float math).
//
// Rounding (the gemmlowp/TFLite scheme): multiply_by_quantized_multiplier(x, q, shift) =
//   rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x << max(shift, 0), q), max(-shift, 0))
// Both steps round to nearest. Exact ties: the high multiply (gemmlowp's nudge-and-truncate) sends them toward
// +infinity (-2.5 -> -2), the final shift away from zero (-2.5 -> -3), or to even where a kernel asks for it. Two roundings, not one: the high
// multiply keeps only -shift fraction bits, so its error (up to 2^(shift-1) output units) can push a value
// across the final rounding's midpoint. The kernels know a bound on their accumulators, so they lift x by the
// spare bits first and shift that much more at the end (multiply_by_quantized_multiplier_lifted), which shrinks
// that error by 2^lift. What remains against PyTorch's reference: its quantize rounds ties to even
// (std::nearbyint) where the final shift rounds them away from zero, and the reference's own float32 rounding.
// tests/kernels/test_quantized_ops.py measures the mismatches.
#pragma once

#include <math.h>
#include <stdint.h>

#include "runtime/core/evalue.h"

namespace ember {
namespace quantized {

// Largest number of int8 products an int32 accumulator can sum without overflow: |x - zero_point| <= 255 and
// |w| <= 128, so each product is at most 32640 in magnitude.
constexpr int64_t kMaxAccumulatedProducts = INT32_MAX / (255 * 128);

struct QuantizedMultiplier {
  int32_t multiplier = 0;  // Q31, in [2^30, 2^31), or 0 when M rounds to nothing
  int32_t shift = 0;  // M = multiplier * 2^(shift - 31); positive shifts are left shifts
};

// Whether `v` can serve as a quantization scale (finite and positive; NaN fails too).
inline bool valid_scale(double v) { return v > 0.0 && v < INFINITY; }

// Whether quantize_multiplier accepts `m`, checked without it: kernels validate arguments before their dtype
// dispatch but call quantize_multiplier (and with it libm's frexp and round) only inside it, so a build that
// leaves a kernel out references no libm for it either. (2^29 leaves margin below quantize_multiplier's 2^30.)
inline bool multiplier_in_range(double m) { return valid_scale(m) && m < 536870912.0; }

// M as a Q31 multiplier and shift. Returns false for a multiplier that is not finite and positive, or too large
// to apply to an int32 (M >= 2^30 would need shifts that overflow even a saturating left shift's purpose).
inline bool quantize_multiplier(double m, QuantizedMultiplier* out) {
  *out = QuantizedMultiplier{};
  if (!valid_scale(m)) return false;
  int exponent = 0;
  const double fraction = frexp(m, &exponent);  // m = fraction * 2^exponent, fraction in [0.5, 1)
  int64_t q = static_cast<int64_t>(round(fraction * 2147483648.0));
  // Rounding the fraction up to 1.0 leaves the Q31 range: halve it and move the power instead.
  if (q == (int64_t{1} << 31)) {
    q /= 2;
    ++exponent;
  }
  if (exponent > 30) return false;
  // Below 2^-31 every int32 input times M rounds to 0 (or to +-1 at the extreme); treat it as exactly 0
  // rather than shift by more than 31, which rounding_divide_by_pot does not support.
  if (exponent < -31) return true;
  out->multiplier = static_cast<int32_t>(q);
  out->shift = exponent;
  return true;
}

// round(a * b / 2^31) to nearest, exact ties toward +infinity, saturating the one case that overflows
// (INT32_MIN * INT32_MIN).
inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  // C++ division truncates toward zero: nudging by half toward the sign rounds to nearest. The negative nudge
  // is a hair short of half (1 - 2^30), which sends a negative exact tie up, toward zero.
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
}

// round(x / 2^exponent), ties away from zero; exponent in [0, 31].
inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  // x >> exponent floors; a negative x needs a strictly larger remainder to round up (toward zero), which
  // makes its ties go down, i.e. away from zero as well.
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// x * M with M as a QuantizedMultiplier (rounding: see the top of this file). A left shift that would overflow
// saturates instead; the result is then not the true product but still beyond +-2^30, far outside int8, which
// is all the clamp that follows needs.
inline int32_t multiply_by_quantized_multiplier(int32_t x, const QuantizedMultiplier& m) {
  int32_t shifted = x;
  if (m.shift > 0) {
    const int64_t wide = static_cast<int64_t>(x) * (int64_t{1} << m.shift);
    shifted = wide > INT32_MAX ? INT32_MAX : wide < INT32_MIN ? INT32_MIN : static_cast<int32_t>(wide);
  }
  const int32_t high = saturating_rounding_doubling_high_mul(shifted, m.multiplier);
  return m.shift < 0 ? rounding_divide_by_pot(high, -m.shift) : high;
}

// The number of bits |x| <= bound can be shifted left and stay within int32.
inline int headroom_bits(int64_t bound) {
  int bits = 0;
  while (bits < 31 && (bound << (bits + 1)) <= INT32_MAX) ++bits;
  return bits;
}

// round(x / 2^exponent), exact ties to the even neighbour, as PyTorch's quantize rounds (std::nearbyint);
// exponent in [0, 31].
inline int32_t rounding_divide_by_pot_half_even(int32_t x, int exponent) {
  if (exponent == 0) return x;
  const int64_t remainder = static_cast<int64_t>(x) & ((int64_t{1} << exponent) - 1);
  const int64_t half = int64_t{1} << (exponent - 1);
  const int32_t below = x >> exponent;  // arithmetic: floors negative values too
  return below + ((remainder > half || (remainder == half && (below & 1) != 0)) ? 1 : 0);
}

// x * M like multiply_by_quantized_multiplier, for an x known to have `headroom` spare bits (|x| << headroom
// fits int32). The high multiply keeps only as many fraction bits as the right shift that follows it, so with
// a multiplier near 1 and a small x it keeps almost none and its rounding can manufacture a tie for the final
// rounding (-122.67 -> -123 -> -61.5 -> -62 for x = -184, M = 1/3). Lifting x first by up to `headroom` bits, and
// shifting that much more at the end, keeps those bits: the same two primitives, as TFLite's add lifts its
// inputs by 2^20 before rescaling them.
//
// With those bits kept, a tie at the final shift is an exact tie of x * M (M = 2^-k, say: an average of 2^k
// values on one scale). kTiesToEven rounds those to even, as the reference does; the pooling kernels ask for it,
// since their averages over 4 or 64 elements tie often (a quarter of 2x2 windows). A template argument, so the
// convolutions' inner requantization stays exactly what it was (no run-time choice for -Os to keep out of line).
//
// This is the one definition of requantization: the scalar kernels apply it through apply_requant_steps, and
// every vector implementation (kernels/helium's MVE lanes) performs the same three steps, which
// requant_steps fixes once per channel: a saturating left shift, the rounding doubling high multiply, and the
// rounding right shift (ties away from zero, or to even where the kernel asks).
struct RequantSteps {
  int32_t multiplier;  // Q31, as in QuantizedMultiplier
  int32_t left;  // saturating left shift, in [0, 31]
  int32_t right;  // rounding right shift, in [0, 31]
};

inline RequantSteps requant_steps(const QuantizedMultiplier& m, int headroom) {
  const int left_shift = m.shift > 0 ? m.shift : 0;
  const int right_shift = m.shift < 0 ? -m.shift : 0;
  int lift = headroom - left_shift;
  if (lift > 31 - right_shift) lift = 31 - right_shift;
  if (lift < 0) lift = 0;
  return RequantSteps{m.multiplier, lift + left_shift, lift + right_shift};
}

template <bool kTiesToEven = false>
inline int32_t apply_requant_steps(int32_t x, const RequantSteps& s) {
  const int64_t wide = static_cast<int64_t>(x) * (int64_t{1} << s.left);
  const int32_t shifted = wide > INT32_MAX ? INT32_MAX : wide < INT32_MIN ? INT32_MIN : static_cast<int32_t>(wide);
  const int32_t high = saturating_rounding_doubling_high_mul(shifted, s.multiplier);
  if constexpr (kTiesToEven) return rounding_divide_by_pot_half_even(high, s.right);
  return rounding_divide_by_pot(high, s.right);
}

// multiply_by_quantized_multiplier as the same three steps (no lift).
inline RequantSteps unlifted_steps(const QuantizedMultiplier& m) {
  return RequantSteps{m.multiplier, m.shift > 0 ? m.shift : 0, m.shift < 0 ? -m.shift : 0};
}

template <bool kTiesToEven = false>
inline int32_t multiply_by_quantized_multiplier_lifted(int32_t x, const QuantizedMultiplier& m, int headroom) {
  return apply_requant_steps<kTiesToEven>(x, requant_steps(m, headroom));
}

// An int64 sum (accumulator plus bias) into int32, saturating: the multiplier then maps it far out of int8 range
// and the clamp settles it, which is what the float reference does with such a value too.
inline int32_t saturate_to_int32(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : static_cast<int32_t>(v);
}

// The final step of every requantizing kernel: scale the accumulator, add the output zero point, clamp to the
// activation range (which lies inside int8, so this also saturates).
inline int8_t clamp_to_int8(int64_t v, int32_t lo, int32_t hi) {
  return static_cast<int8_t>(v < lo ? lo : v > hi ? hi : v);
}

// `headroom`: spare bits above the accumulator's bound (headroom_bits), 0 if unknown.
inline int8_t requantize(int32_t acc, const QuantizedMultiplier& m, int headroom, int32_t output_zero_point,
                         int32_t act_min, int32_t act_max) {
  return clamp_to_int8(static_cast<int64_t>(multiply_by_quantized_multiplier_lifted(acc, m, headroom)) +
                           output_zero_point,
                       act_min, act_max);
}

// sum(|w|) over one output channel's weights. Summed in int32 (at most 128 * kMaxAccumulatedProducts per
// channel), which compilers vectorize: a large model's load step spends its time here.
inline int64_t weight_magnitude(const int8_t* weights, int64_t count) {
  int64_t total = 0;
  while (count > 0) {
    const int64_t n = count < kMaxAccumulatedProducts ? count : kMaxAccumulatedProducts;
    int32_t part = 0;
    int64_t i = 0;
    // Blocks of a fixed count: gcc's -O2 vectorizes those, not a loop whose count needs a remainder. (Not in a
    // size build: the bare-metal firmware keeps its one loop.)
#if !defined(__OPTIMIZE_SIZE__)
    for (; i + 16 <= n; i += 16) {
      for (int j = 0; j < 16; ++j) part += weights[i + j] < 0 ? -int32_t{weights[i + j]} : int32_t{weights[i + j]};
    }
#endif
    for (; i < n; ++i) part += weights[i] < 0 ? -int32_t{weights[i]} : int32_t{weights[i]};
    total += part;
    weights += n, count -= n;
  }
  return total;
}

// Spare bits of an accumulator sum((x - zp) * w) + bias over one output channel's weights: |x - zp| <= 255.
inline int accumulator_headroom(const int8_t* weights, int64_t count, int64_t bias) {
  const int64_t bound = (bias < 0 ? -bias : bias) + 255 * weight_magnitude(weights, count);
  return bound > INT32_MAX ? 0 : headroom_bits(bound);
}

// Element `i` of a 1-d float32 or float64 scale tensor (callers check the dtype first).
inline double scale_at(const Tensor& scales, int64_t i) {
  return scales.scalar_type() == ScalarType::Double ? scales.const_data_ptr<double>()[i]
                                                    : static_cast<double>(scales.const_data_ptr<float>()[i]);
}

inline bool is_scale_dtype(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }

// Whether an int argument (zero point, activation bound) is a valid int8 value.
inline bool in_int8_range(int64_t v) { return v >= -128 && v <= 127; }

}  // namespace quantized
}  // namespace ember
