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

// One input row against every output channel, four channels per pass. Sizes are int32 (tensor extents are):
// 64-bit loop arithmetic is several instructions per step on this core. The loop carries only pointers: a small
// layer's call is a few passes, so what a pass spends outside its dot product counts.
void linear_row(const int8_t* x, const int8_t* w, const RequantState& q, int32_t IC, int32_t OC, int8_t* o) {
  const int32x4_t lo = vdupq_n_s32(q.header.activation_min), hi = vdupq_n_s32(q.header.activation_max);
  const int32_t zp_out = q.header.output_zero_point;
  const int32_t* correction = q.corrections();
  const int32_t* multiplier = q.multipliers();
  const int32_t* left = q.left_shifts();
  const int32_t* negated_right = q.negated_right_shifts();
  int32_t left_over = OC;
  for (; left_over >= 4; left_over -= 4) {
    const Sums4 sums = dot4(x, w, w + IC, w + 2 * IC, w + 3 * IC, IC);
    const ChannelBlock c{vldrwq_s32(correction), vldrwq_s32(multiplier), vldrwq_s32(left), vldrwq_s32(negated_right)};
    vstrbq_s32(o, finish_block(sums, c, zp_out, lo, hi));
    w += 4 * IC, o += 4, correction += 4, multiplier += 4, left += 4, negated_right += 4;
  }
  if (left_over == 0) return;
  // The last 1..3 channels: rows past the last repeat it (and its state does too), computed, never stored.
  const int8_t* w1 = left_over > 1 ? w + IC : w;
  const int8_t* w2 = left_over > 2 ? w + 2 * IC : w1;
  const Sums4 sums = dot4(x, w, w1, w2, w2, IC);
  const ChannelBlock c{vldrwq_s32(correction), vldrwq_s32(multiplier), vldrwq_s32(left), vldrwq_s32(negated_right)};
  vstrbq_p_s32(o, finish_block(sums, c, zp_out, lo, hi), vctp32q(static_cast<uint32_t>(left_over)));
}

// The same row when some channel's correction needs 64 bits (only a program with extreme biases has one): the
// vector dot products, then each channel finished in scalar code. Out of line, so the common path above keeps
// its registers.
__attribute__((noinline)) void linear_row_wide(const int8_t* x, const int8_t* w, const int32_t* bias,
                                               const RequantState& q, int32_t IC, int32_t OC, int8_t* o) {
  for (int32_t oc0 = 0; oc0 < OC; oc0 += 4) {
    const int32_t n = OC - oc0 < 4 ? OC - oc0 : 4;
    const int8_t* w0 = w + oc0 * IC;
    const int8_t* w1 = n > 1 ? w0 + IC : w0;
    const int8_t* w2 = n > 2 ? w0 + 2 * IC : w1;
    const int8_t* w3 = n > 3 ? w0 + 3 * IC : w2;
    const Sums4 sums = dot4(x, w0, w1, w2, w3, IC);
    const int32_t s[4] = {sums.s0, sums.s1, sums.s2, sums.s3};
    for (int32_t i = 0; i < n; ++i) {
      const int32_t oc = oc0 + i;
      o[oc] = finish_wide(s[i], wide_correction(w + oc * IC, IC, bias, oc, q.header.input_zero_point), q, oc);
    }
  }
}

}  // namespace

KernelMemory linear_memory(const KernelArgs& args) { return requant_state_memory(args, kArgs); }
Error linear_prepare(const KernelArgs& args, void* state) {
  const Error prepared = prepare_requant_state(args, kArgs, state);
  if (prepared != Error::Ok) return prepared;
  return quantized::check_linear_at_load(args, &static_cast<RequantState*>(state)->header);
}

// The quantization arguments are read from the state linear_prepare filled, not from here.
void linear_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* bias, double /*output_scale*/,
                int64_t /*output_zero_point*/, int64_t /*activation_min*/, int64_t /*activation_max*/, Tensor& out) {
  // The checks (shared with kernels/quantized, and made at load when the shapes cannot change) include that the
  // state was prepared for this weight: its header is the quantized library's.
  quantized::LinearGeometry geo;
  if (!quantized::linear_call_geometry(ctx, input, weight, out, &geo)) return;
  constexpr uint32_t kMask = selected_dtypes::linear_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::linear.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    const int32_t* b = bias != nullptr ? bias->const_data_ptr<int32_t>() : nullptr;
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t IC = static_cast<int32_t>(geo.IC), OC = static_cast<int32_t>(geo.OC);
    const int32_t rows = static_cast<int32_t>(geo.rows);
    const RequantState& q = *ctx.state<RequantState>();
    for (int32_t r = 0; r < rows; ++r) {
      if (q.corrections_fit()) {
        linear_row(x + r * IC, w, q, IC, OC, o + r * OC);
      } else {
        linear_row_wide(x + r * IC, w, b, q, IC, OC, o + r * OC);
      }
    }
  });
}

}  // namespace helium
}  // namespace ember
