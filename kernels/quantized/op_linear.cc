// Quantized linear: out[..., oc] = requantize(sum_k (x[..., k] - zp_in) * w[oc, k] + bias[oc]), int8 in and
// out, int32 accumulation, a fixed-point multiplier per output channel (util/requantize.h).
//
// The zero point is taken out of the dot product (sum_k x*w - zp_in * sum_k w), so the inner loop is a plain
// int8 x int8 -> int32 dot product a compiler can vectorize; sum_k w is computed once per output channel.
// Output channel outermost: its multiplier and weight sum are derived once per call, and its weight row stays
// in cache while every input row passes over it.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {

using portable::fit_output;

void linear_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, double output_scale,
                int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, input.dim() >= 1 && weight.dim() == 2, InvalidArgument,
                     "ember_quantized::linear.out: input must be [..., in_features] and weight [out_features, "
                     "in_features], got %d-d and %d-d", static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  const int64_t IC = input.size(input.dim() - 1), OC = weight.size(0);
  EMBER_KERNEL_CHECK(ctx, weight.size(1) == IC, InvalidArgument,
                     "ember_quantized::linear.out: input has %lld features but weight expects %lld",
                     static_cast<long long>(IC), static_cast<long long>(weight.size(1)));
  EMBER_KERNEL_CHECK(ctx, weight_scales.dim() == 1 && (weight_scales.numel() == OC || weight_scales.numel() == 1),
                     InvalidArgument, "ember_quantized::linear.out: weight_scales must have %lld elements (one per "
                     "output feature) or 1, got %lld", static_cast<long long>(OC),
                     static_cast<long long>(weight_scales.numel()));
  EMBER_KERNEL_CHECK(ctx, bias == nullptr || (bias->dim() == 1 && bias->size(0) == OC), InvalidArgument,
                     "ember_quantized::linear.out: bias must have %lld elements", static_cast<long long>(OC));
  EMBER_KERNEL_CHECK(ctx, IC <= kMaxAccumulatedProducts, NotSupported,
                     "ember_quantized::linear.out: %lld input features could overflow the int32 accumulator (at "
                     "most %lld)", static_cast<long long>(IC), static_cast<long long>(kMaxAccumulatedProducts));
  int32_t shape[kMaxTensorDim];
  for (int32_t d = 0; d + 1 < input.dim(); ++d) shape[d] = input.size(d);
  shape[input.dim() - 1] = static_cast<int32_t>(OC);
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(input.dim())), InvalidArgument,
                     "ember_quantized::linear.out: out must be the input's shape with %lld features",
                     static_cast<long long>(OC));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::linear.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Char && weight.scalar_type() == ScalarType::Char &&
                              out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::linear.out: input, weight and out must be int8, got %s, %s "
                     "and %s", scalar_type_name(input.scalar_type()), scalar_type_name(weight.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, is_scale_dtype(weight_scales.scalar_type()), InvalidArgument,
                     "ember_quantized::linear.out: weight_scales must be float32, got %s",
                     scalar_type_name(weight_scales.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, bias == nullptr || bias->scalar_type() == ScalarType::Int, InvalidArgument,
                     "ember_quantized::linear.out: bias must be int32 (scale input_scale * weight_scale), got %s",
                     scalar_type_name(bias->scalar_type()));
  EMBER_KERNEL_CHECK(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                     "ember_quantized::linear.out: scales must be positive, got input %g and output %g", input_scale,
                     output_scale);
  EMBER_KERNEL_CHECK(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point) &&
                              in_int8_range(activation_min) && in_int8_range(activation_max) &&
                              activation_min <= activation_max,
                     InvalidArgument, "ember_quantized::linear.out: zero points (%lld, %lld) and activation range "
                     "[%lld, %lld] must be int8 values", static_cast<long long>(input_zero_point),
                     static_cast<long long>(output_zero_point), static_cast<long long>(activation_min),
                     static_cast<long long>(activation_max));
  for (int64_t oc = 0; oc < weight_scales.numel(); ++oc) {
    EMBER_KERNEL_CHECK(ctx, valid_scale(scale_at(weight_scales, oc)) &&
                                multiplier_in_range(input_scale * scale_at(weight_scales, oc) / output_scale),
                       InvalidArgument, "ember_quantized::linear.out: weight scale %g of feature %lld gives no "
                       "usable requantization multiplier", scale_at(weight_scales, oc), static_cast<long long>(oc));
  }
  constexpr uint32_t kMask = selected_dtypes::linear_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::linear.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    const int32_t* b = bias ? bias->const_data_ptr<int32_t>() : nullptr;
    int8_t* o = out.mutable_data_ptr<int8_t>();
    int64_t rows = 1;
    for (int32_t d = 0; d + 1 < input.dim(); ++d) rows *= input.size(d);
    const int32_t zp_out = static_cast<int32_t>(output_zero_point);
    const int32_t lo = static_cast<int32_t>(activation_min), hi = static_cast<int32_t>(activation_max);
    for (int64_t oc = 0; oc < OC; ++oc) {
      QuantizedMultiplier m;
      quantize_multiplier(input_scale * scale_at(weight_scales, weight_scales.numel() == 1 ? 0 : oc) / output_scale,
                          &m);
      const int8_t* wr = w + oc * IC;
      int64_t wsum = 0;
      for (int64_t k = 0; k < IC; ++k) wsum += wr[k];
      const int64_t correction = (b ? b[oc] : 0) - input_zero_point * wsum;
      const int headroom = accumulator_headroom(wr, IC, b ? b[oc] : 0);
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
