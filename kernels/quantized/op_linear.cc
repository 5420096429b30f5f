// Quantized linear: out[..., oc] = requantize(sum_k (x[..., k] - zp_in) * w[oc, k] + bias[oc]), int8 in and
// out, int32 accumulation, a fixed-point multiplier per output channel (util/requantize.h).
//
// The zero point is taken out of the dot product (sum_k x*w - zp_in * sum_k w), so the inner loop is a plain
// int8 x int8 -> int32 dot product a compiler can vectorize; sum_k w is computed once per output channel.
// Each channel's multiplier, weight sum, headroom and bias are derived once, at load, by linear_prepare
// (util/channel_params.h), which also checks every constant and scalar argument. Output channel outermost: its
// weight row stays in cache while every input row passes over it.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {

namespace {
// linear.out(input, input_scale, input_zero_point, weight, weight_scales, bias, output_scale, output_zero_point,
//            activation_min, activation_max, out)
constexpr RequantArgs kArgs = {"ember_quantized::linear.out", 2, 1, 2, 3, 4, 5, 6, 7, 8, 9};
}  // namespace

KernelMemory linear_memory(const KernelArgs& args) { return requant_memory(args, kArgs); }
Error linear_prepare(const KernelArgs& args, void* state) {
  const Error prepared = requant_prepare(args, kArgs, state);
  if (prepared != Error::Ok) return prepared;
  return check_linear_at_load(args, static_cast<RequantHeader*>(state));
}

// The quantization arguments are read from the state linear_prepare filled, not from here.
void linear_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* /*bias*/, double /*output_scale*/,
                int64_t /*output_zero_point*/, int64_t /*activation_min*/, int64_t /*activation_max*/, Tensor& out) {
  LinearGeometry geo;
  if (!linear_call_geometry(ctx, input, weight, out, &geo)) return;
  const int64_t IC = geo.IC, OC = geo.OC;
  constexpr uint32_t kMask = selected_dtypes::linear_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::linear.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const RequantHeader& q = *ctx.state<RequantHeader>();
    const ChannelParams* channels = channel_params(&q);
    const int64_t rows = geo.rows;
    const int32_t zp_out = q.output_zero_point;
    const int32_t lo = q.activation_min, hi = q.activation_max;
    for (int64_t oc = 0; oc < OC; ++oc) {
      const ChannelParams& c = channels[oc];
      const QuantizedMultiplier m{c.multiplier, c.shift};
      const int headroom = c.headroom;
      const int8_t* wr = w + oc * IC;
      const int64_t correction = int64_t{c.bias} - int64_t{q.input_zero_point} * c.weight_sum;
      for (int64_t r = 0; r < rows; ++r) {
        const int8_t* xr = x + r * IC;
        int32_t dot = 0;
        for (int64_t k = 0; k < IC; ++k) dot += static_cast<int32_t>(xr[k]) * static_cast<int32_t>(wr[k]);
        o[r * OC + oc] = requantize(saturate_to_int32(dot + correction), m, headroom, zp_out, lo, hi);
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
