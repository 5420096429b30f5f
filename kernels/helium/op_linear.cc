// ember_quantized::linear.out on MVE: four output channels per pass over an input row, each 16 inputs loaded once
// and multiplied against the four weight rows with VMLADAVA (16 products per instruction), then the four sums
// requantized as one vector. Same checks, messages and bits as kernels/quantized/op_linear.cc.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/channel_block.h"
#include "kernels/helium/util/dot.h"
#include "kernels/helium/util/requant_state.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

// linear.out(input, input_scale, input_zero_point, weight, weight_scales, bias, output_scale, output_zero_point,
//            activation_min, activation_max, out)
constexpr quantized::RequantArgs kArgs = {"ember_quantized::linear.out", 2, 1, 2, 3, 4, 5, 6, 7, 8, 9};

// One input row against every output channel. Sizes are int32 (tensor extents are): 64-bit loop arithmetic is
// several instructions per step on this core.
void linear_row(const int8_t* x, const int8_t* w, const int32_t* bias, const RequantState& q, int32_t IC, int32_t OC,
                int8_t* o) {
  const int32x4_t lo = vdupq_n_s32(q.header.activation_min), hi = vdupq_n_s32(q.header.activation_max);
  const int32_t zp_out = q.header.output_zero_point;
  const bool fits = q.corrections_fit();
  for (int32_t oc0 = 0; oc0 < OC; oc0 += 4) {
    const int32_t n = OC - oc0 < 4 ? OC - oc0 : 4;
    // Rows past the last channel repeat it (and its state does too): computed, never stored.
    const int8_t* w0 = w + oc0 * IC;
    const int8_t* w1 = n > 1 ? w0 + IC : w0;
    const int8_t* w2 = n > 2 ? w0 + 2 * IC : w1;
    const int8_t* w3 = n > 3 ? w0 + 3 * IC : w2;
    const Sums4 sums = dot4(x, w0, w1, w2, w3, IC);
    if (fits) {
      const int32x4_t v = finish_block(sums, channel_block(q, oc0), zp_out, lo, hi);
      if (n == 4) {
        vstrbq_s32(o + oc0, v);
      } else {
        vstrbq_p_s32(o + oc0, v, vctp32q(static_cast<uint32_t>(n)));
      }
      continue;
    }
    const int32_t s[4] = {sums.s0, sums.s1, sums.s2, sums.s3};
    for (int32_t i = 0; i < n; ++i) {
      const int32_t oc = oc0 + i;
      o[oc] = finish_wide(s[i], wide_correction(w + oc * IC, IC, bias, oc, q.header.input_zero_point), q, oc);
    }
  }
}

}  // namespace

KernelMemory linear_memory(const KernelArgs& args) { return requant_state_memory(args, kArgs); }
Error linear_prepare(const KernelArgs& args, void* state) { return prepare_requant_state(args, kArgs, state); }

// The quantization arguments are read from the state linear_prepare filled, not from here.
void linear_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* bias,
                double /*output_scale*/, int64_t /*output_zero_point*/, int64_t /*activation_min*/,
                int64_t /*activation_max*/, Tensor& out) {
  // The checks (shared with kernels/quantized) include that the state was prepared for this weight: its header
  // is the quantized library's.
  quantized::LinearGeometry geo;
  if (!quantized::linear_geometry(ctx, input, weight, out, &geo)) return;
  constexpr uint32_t kMask = selected_dtypes::linear_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::linear.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    const int32_t* b = bias != nullptr ? bias->const_data_ptr<int32_t>() : nullptr;
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t IC = static_cast<int32_t>(geo.IC), OC = static_cast<int32_t>(geo.OC);
    const int32_t rows = static_cast<int32_t>(geo.rows);
    for (int32_t r = 0; r < rows; ++r) linear_row(x + r * IC, w, b, *ctx.state<RequantState>(), IC, OC, o + r * OC);
  });
}

}  // namespace helium
}  // namespace ember
