// Requantization on MVE lanes: the three steps of kernels/quantized/util/requantize.h (RequantSteps), each one
// instruction, with the same bits as apply_requant_steps:
//   saturating left shift        VQSHL     (saturates as the scalar int64 shift-and-clamp does)
//   rounding doubling high mul   VQRDMULH  ((2ab + 2^31) >> 32 rounds ties up, as the scalar nudge-and-truncate
//                                           does for both signs; INT32_MIN * INT32_MIN saturates in both)
//   rounding right shift         VRSHL by a negative amount rounds ties up; the scalar rounds them away from
//                                zero, so negative lanes are first stepped down by one where the shift is not 0
//                                (a saturating step: INT32_MIN stays, and its result is the same either way).
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

// Per-lane steps (four channels).
inline int32x4_t requant_steps_lanes(int32x4_t x, int32x4_t multiplier, int32x4_t left, int32x4_t negated_right) {
  int32x4_t v = vqshlq_s32(x, left);
  v = vqrdmulhq_s32(v, multiplier);
  // -1 in lanes that are negative and shift right by at least one: the sign bit survives the AND with a negative
  // shift amount only there.
  const int32x4_t step_down = vshrq_n_s32(vandq_s32(v, negated_right), 31);
  return vrshlq_s32(vqaddq_s32(v, step_down), negated_right);
}

// One channel's steps for four of its outputs.
inline int32x4_t requant_steps_lanes(int32x4_t x, int32_t multiplier, int32_t left, int32_t negated_right) {
  int32x4_t v = vqshlq_r_s32(x, left);
  v = vqrdmulhq_n_s32(v, multiplier);
  if (negated_right != 0) v = vqaddq_s32(v, vshrq_n_s32(v, 31));
  return vrshlq_n_s32(v, negated_right);
}

// The same steps with the final shift's exact ties going to the even neighbour (apply_requant_steps<true>: the
// pooling kernels' rounding, as PyTorch's quantize rounds an average that lands halfway). `right` is the state's
// shift itself, in [0, 31]: floor by an arithmetic shift, then one more where the remainder passes half, or equals
// it below an odd result.
inline int32x4_t requant_steps_lanes_ties_to_even(int32x4_t x, int32x4_t multiplier, int32x4_t left, int32_t right) {
  int32x4_t v = vqrdmulhq_s32(vqshlq_s32(x, left), multiplier);
  if (right == 0) return v;
  const int32x4_t below = vshlq_s32(v, vdupq_n_s32(-right));
  const int32x4_t remainder = vandq_s32(v, vdupq_n_s32(static_cast<int32_t>((uint32_t{1} << right) - 1u)));
  const int32_t half = static_cast<int32_t>(uint32_t{1} << (right - 1));
  // 0/1 lanes rather than combined predicates (gcc 12 fails on arithmetic between MVE predicates).
  const int32x4_t zero = vdupq_n_s32(0), one = vdupq_n_s32(1);
  const int32x4_t past_half = vpselq_s32(one, zero, vcmpgtq_n_s32(remainder, half));
  const int32x4_t tie_below_odd = vpselq_s32(vandq_s32(below, one), zero, vcmpeqq_n_s32(remainder, half));
  return vaddq_s32(below, vorrq_s32(past_half, tie_below_odd));
}

// The output zero point, then the activation range (inside int8, so the narrowing store that follows is exact).
inline int32x4_t to_output_range(int32x4_t v, int32_t zero_point, int32x4_t lo, int32x4_t hi) {
  return vminq_s32(vmaxq_s32(vaddq_n_s32(v, zero_point), lo), hi);
}

}  // namespace helium
}  // namespace ember
