// Four output channels' raw dot products finished into int8 values: the channel's correction (bias and the input
// zero point's share), the requantization steps and the output range, with the values RequantState holds.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

#include "kernels/helium/util/dot.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/helium/util/requant_state.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace helium {

struct ChannelBlock {
  int32x4_t correction, multiplier, left, negated_right;
};

inline ChannelBlock channel_block(const RequantState& q, int64_t oc0) {
  return ChannelBlock{vldrwq_s32(q.corrections() + oc0), vldrwq_s32(q.multipliers() + oc0),
                      vldrwq_s32(q.left_shifts() + oc0), vldrwq_s32(q.negated_right_shifts() + oc0)};
}

// Saturating the sum to int32 is the scalar kernels' saturate_to_int32(acc + correction) when the correction
// fits int32 (RequantState::corrections_fit); otherwise finish_wide below.
inline int32x4_t finish_block(const Sums4& sums, const ChannelBlock& c, int32_t zero_point, int32x4_t lo,
                              int32x4_t hi) {
  const int32x4_t acc = vqaddq_s32(as_lanes(sums), c.correction);
  return to_output_range(requant_steps_lanes(acc, c.multiplier, c.left, c.negated_right), zero_point, lo, hi);
}

// One channel's sum with a correction that needs 64 bits, in scalar code (the same steps, one lane).
inline int8_t finish_wide(int32_t sum, int64_t correction, const RequantState& q, int64_t oc) {
  const quantized::RequantSteps steps{q.multipliers()[oc], q.left_shifts()[oc], -q.negated_right_shifts()[oc]};
  const int32_t scaled = quantized::apply_requant_steps(quantized::saturate_to_int32(sum + correction), steps);
  return quantized::clamp_to_int8(int64_t{scaled} + q.header.output_zero_point, q.header.activation_min,
                                  q.header.activation_max);
}

}  // namespace helium
}  // namespace ember
