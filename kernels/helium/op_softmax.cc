// ember_quantized::softmax.out on MVE along the last dim (contiguous rows: a classifier's scores, attention rows);
// other dims go to kernels/quantized, which shares the state (kernels/quantized/util/softmax_table.h: the table
// built at load, the per-row multiplier, the same checks). Per row, three passes over the int8 values:
//   maximum    16 bytes per VMAXV
//   sum        four bytes widened to int32 lanes, d = max - q, the table entries T[d] by a gather load (VLDRW with
//              shifted offsets), accumulated into 64 bits across lanes (VADDLVA)
//   output     the same four entries again, times the row's multiplier (VQRDMULH), the final shift with exact ties
//              to even, plus the zero point, saturated at 127, and a narrowing byte store
// with one reciprocal per row between the last two (softmax_row_steps, integer only). Tails are predicated. The
// arithmetic is the scalar kernel's step for step, so the bytes are the host's.
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/softmax_table.h"

namespace ember {
namespace helium {
namespace {

using quantized::RequantSteps;
using quantized::SoftmaxState;

int32_t row_max(const int8_t* x, int32_t n) {
  int8_t max = -128;
  for (; n >= 16; n -= 16, x += 16) max = vmaxvq_s8(max, vldrbq_s8(x));
  if (n > 0) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n));
    max = vmaxvq_p_s8(max, vldrbq_z_s8(x, p), p);
  }
  return max;
}

// T[max - q] for four bytes (d in [0, 255]: the gather stays inside the table). Inactive lanes of a tail are
// neither loaded nor gathered, and read as 0.
inline int32x4_t entries(const int8_t* x, int32x4_t max, const int32_t* table) {
  const uint32x4_t d = vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_s32(x)));
  return vldrwq_gather_shifted_offset_s32(table, d);
}

inline int32x4_t entries_z(const int8_t* x, int32x4_t max, const int32_t* table, mve_pred16_t p) {
  const uint32x4_t d = vreinterpretq_u32_s32(vsubq_x_s32(max, vldrbq_z_s32(x, p), p));
  return vldrwq_gather_shifted_offset_z_s32(table, d, p);
}

int64_t row_sum(const int8_t* x, int32_t n, int32_t max, const int32_t* table) {
  const int32x4_t vmax = vdupq_n_s32(max);
  int64_t sum = 0;
  for (; n >= 8; n -= 8, x += 8) {
    sum = vaddlvaq_s32(sum, entries(x, vmax, table));
    sum = vaddlvaq_s32(sum, entries(x + 4, vmax, table));
  }
  for (; n > 0; n -= 4, x += 4) sum = vaddlvaq_s32(sum, entries_z(x, vmax, table, vctp32q(static_cast<uint32_t>(n))));
  return sum;
}

// The row's requantization on four entries: apply_requant_steps<true> with the state's invariants (no left shift,
// a right shift in [1, 31]: softmax_row_steps). An entry times a multiplier below 1/2 stays non-negative, where
// ties to even is (v - 1 + bit r of v), rounded half up by r bits: VRSHL's own rounding.
// The floor's shift takes its amount from a vector (VSHL by a scalar register overwrites its operand, which v is
// still needed after: a copy per vector otherwise).
inline int32x4_t to_output(int32x4_t t, int32_t multiplier, int32x4_t negated_right, int32_t zero_point) {
  const int32x4_t v = vqrdmulhq_n_s32(t, multiplier);
  const int32x4_t even = vbicq_s32(vdupq_n_s32(1), vshlq_s32(v, negated_right));  // 1 where the floor is even
  const int32x4_t rounded = vrshlq_s32(vsubq_s32(v, even), negated_right);
  return vminq_s32(vaddq_n_s32(rounded, zero_point), vdupq_n_s32(127));
}

void row_out(const int8_t* x, int8_t* o, int32_t n, int32_t max, const int32_t* table, const RequantSteps& s,
             int32_t zero_point) {
  const int32x4_t vmax = vdupq_n_s32(max);
  const int32_t multiplier = s.multiplier;
  const int32x4_t negated_right = vdupq_n_s32(-s.right);
  for (; n >= 4; n -= 4, x += 4, o += 4) {
    vstrbq_s32(o, to_output(entries(x, vmax, table), multiplier, negated_right, zero_point));
  }
  if (n > 0) {
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n));
    vstrbq_p_s32(o, to_output(entries_z(x, vmax, table, p), multiplier, negated_right, zero_point), p);
  }
}

}  // namespace

KernelMemory quantized_softmax_memory(const KernelArgs& args) { return quantized::softmax_table_memory(args); }
Error quantized_softmax_prepare(const KernelArgs& args, void* state) {
  return quantized::softmax_table_prepare(args, state);
}

void quantized_softmax_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                           int64_t dim, double output_scale, int64_t output_zero_point, Tensor& out) {
  quantized::SoftmaxRows rows;
  if (!quantized::plan_softmax(ctx, input, dim, out, &rows)) return;
  if (rows.inner != 1 || rows.length > INT32_MAX) {
    quantized::softmax_out(ctx, input, input_scale, input_zero_point, dim, output_scale, output_zero_point, out);
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::quantized_softmax_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::softmax.out", kMask, input.scalar_type(), [&](auto) {
    const SoftmaxState& state = *ctx.state<SoftmaxState>();
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t n = static_cast<int32_t>(rows.length);
    for (int64_t r = 0; r < rows.outer; ++r, x += n, o += n) {
      const int32_t max = row_max(x, n);
      const int64_t sum = row_sum(x, n, max, state.table);
      row_out(x, o, n, max, state.table, quantized::softmax_row_steps(state, sum), state.output_zero_point);
    }
  });
}

}  // namespace helium
}  // namespace ember
