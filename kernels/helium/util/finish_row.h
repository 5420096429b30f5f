// A run of one output channel's int32 sums finished into int8 outputs: the channel's correction, the
// requantization steps and the output range, four outputs per vector with the channel's values as scalars, and a
// contiguous narrowing store (NCHW keeps a channel's outputs together). Every convolution path ends here.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

#include "kernels/helium/util/channel_block.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/helium/util/requant_state.h"

namespace ember {
namespace helium {

// `wide`: the channel's 64-bit correction (wide_correction) when the state's corrections do not fit int32.
inline void finish_row(const int32_t* sums, int32_t n, const RequantState& q, int32_t oc, int64_t wide, int8_t* out) {
  if (!q.corrections_fit()) {
    for (int32_t i = 0; i < n; ++i) out[i] = finish_wide(sums[i], wide, q, oc);
    return;
  }
  const int32_t correction = q.corrections()[oc], multiplier = q.multipliers()[oc], left = q.left_shifts()[oc];
  const int32_t negated_right = q.negated_right_shifts()[oc], zp_out = q.header.output_zero_point;
  const int32x4_t lo = vdupq_n_s32(q.header.activation_min), hi = vdupq_n_s32(q.header.activation_max);
  for (; n >= 4; n -= 4, sums += 4, out += 4) {
    const int32x4_t v =
        requant_steps_lanes(vqaddq_n_s32(vldrwq_s32(sums), correction), multiplier, left, negated_right);
    vstrbq_s32(out, to_output_range(v, zp_out, lo, hi));
  }
  if (n > 0) {
    const int32x4_t v =
        requant_steps_lanes(vqaddq_n_s32(vldrwq_s32(sums), correction), multiplier, left, negated_right);
    vstrbq_p_s32(out, to_output_range(v, zp_out, lo, hi), vctp32q(static_cast<uint32_t>(n)));
  }
}

}  // namespace helium
}  // namespace ember
