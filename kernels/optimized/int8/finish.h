// The last steps of every int8 convolution and linear tier, in scalar form: from a tier's int32 sum (its products,
// which include the activation offset, plus RowFinish::correction) to the output byte, through the one
// requantization of kernels/quantized/util/requantize.h. The vector tiers perform the same steps on lanes; they
// hand a channel whose sum could overflow int32 (RowFinish::exact false) to finish_wide here.
#pragma once

#include <stdint.h>

#include "kernels/optimized/int8/conv.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace optimized {

// What every output of a call shares.
struct OutputRange {
  int32_t zero_point, lo, hi;
};

inline OutputRange output_range(const quantized::RequantHeader& q) {
  return OutputRange{q.output_zero_point, q.activation_min, q.activation_max};
}

inline quantized::RequantSteps steps_of(const RowFinish& f) {
  return quantized::RequantSteps{f.multiplier, f.left, f.right};
}

// An exact channel: the sum already holds the correction and cannot have overflowed.
inline int8_t finish_exact(int32_t sum, const RowFinish& f, const OutputRange& r) {
  return quantized::clamp_to_int8(int64_t{quantized::apply_requant_steps(sum, steps_of(f))} + r.zero_point, r.lo, r.hi);
}

// Any channel: the products' sum `raw` (no correction in it) and the channel's correction in 64 bits, saturated to
// int32 as the scalar kernel saturates its accumulator.
inline int64_t wide_correction(const quantized::ChannelParams& c, int32_t zero_point_plus_offset) {
  return int64_t{c.bias} - int64_t{zero_point_plus_offset} * c.weight_sum;
}

inline int8_t finish_wide(int32_t raw, int64_t correction, const RowFinish& f, const OutputRange& r) {
  const int32_t acc = quantized::saturate_to_int32(int64_t{raw} + correction);
  return quantized::clamp_to_int8(int64_t{quantized::apply_requant_steps(acc, steps_of(f))} + r.zero_point, r.lo, r.hi);
}

// `n` outputs of one channel from raw sums (the channel's RowFinish::correction already added when it is exact).
inline void finish_row_scalar(const int32_t* sums, int32_t n, const RowFinish& f, const quantized::ChannelParams& c,
                              int32_t zero_point_plus_offset, const OutputRange& r, int8_t* out) {
  if (f.exact) {
    for (int32_t i = 0; i < n; ++i) out[i] = finish_exact(sums[i], f, r);
    return;
  }
  const int64_t correction = wide_correction(c, zero_point_plus_offset);
  for (int32_t i = 0; i < n; ++i) out[i] = finish_wide(sums[i], correction, f, r);
}

}  // namespace optimized
}  // namespace ember
