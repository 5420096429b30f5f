// Quantized adaptive average pooling over the last two dims of an int8 [N, C, H, W] (or [C, H, W]) tensor.
// Output cell (i, j) averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns likewise: PyTorch's rule.
//
// The average and the change of scale are one fixed-point multiply: out = zp_out + sum(q - zp_in) * M with
// M = input_scale / (output_scale * window_size). Windows differ in size, but along one dim the rule above only
// ever yields two lengths (ceil(H/OH) and one more, or exactly H/OH when it divides), so there are at most four
// window sizes and four multipliers, all derived before the loops.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;

int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// The shortest window along one dim, and whether all windows are it or one longer (always true of the rule;
// checked so a future change to it cannot index outside the multiplier table).
bool window_lengths(int64_t in, int64_t out, int64_t* shortest) {
  int64_t lo = in, hi = 0;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t len = window_end(i, in, out) - window_start(i, in, out);
    lo = len < lo ? len : lo;
    hi = len > hi ? len : hi;
  }
  *shortest = lo;
  return lo >= 1 && hi - lo <= 1;
}

}  // namespace

void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, input.dim() == 3 || input.dim() == 4, InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: input must be 3-d or 4-d, got %d-d",
                     static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, output_size.size() == 2 && output_size[0] > 0 && output_size[1] > 0, InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: output_size must be two positive sizes");
  const int32_t rank = input.dim();
  const int64_t H = input.size(rank - 2), W = input.size(rank - 1);
  const int64_t OH = output_size[0], OW = output_size[1];
  EMBER_KERNEL_CHECK(ctx, H > 0 && W > 0, InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: cannot pool an empty %lldx%lld plane",
                     static_cast<long long>(H), static_cast<long long>(W));
  EMBER_KERNEL_CHECK(ctx, H * W <= INT32_MAX / 255, NotSupported,
                     "ember_quantized::adaptive_avg_pool2d.out: a %lldx%lld plane could overflow the int32 sum",
                     static_cast<long long>(H), static_cast<long long>(W));
  int32_t shape[4];
  for (int32_t d = 0; d < rank - 2; ++d) shape[d] = input.size(d);
  shape[rank - 2] = static_cast<int32_t>(OH);
  shape[rank - 1] = static_cast<int32_t>(OW);
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(rank)), InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: out must be the input's shape with a %lldx%lld plane",
                     static_cast<long long>(OH), static_cast<long long>(OW));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::adaptive_avg_pool2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::adaptive_avg_pool2d.out: input and out must be int8, got %s "
                     "and %s", scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: scales must be positive, got %g and %g", input_scale,
                     output_scale);
  EMBER_KERNEL_CHECK(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point), InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: zero points %lld and %lld must be int8 values",
                     static_cast<long long>(input_zero_point), static_cast<long long>(output_zero_point));
  int64_t h_short = 0, w_short = 0;
  EMBER_KERNEL_CHECK(ctx, window_lengths(H, OH, &h_short) && window_lengths(W, OW, &w_short), InvalidArgument,
                     "ember_quantized::adaptive_avg_pool2d.out: windows of %lldx%lld -> %lldx%lld vary by more than 1",
                     static_cast<long long>(H), static_cast<long long>(W), static_cast<long long>(OH),
                     static_cast<long long>(OW));
  // The smallest window has the largest multiplier: if it is usable, all four are.
  EMBER_KERNEL_CHECK(ctx, multiplier_in_range(input_scale / (output_scale * static_cast<double>(h_short * w_short))),
                     InvalidArgument, "ember_quantized::adaptive_avg_pool2d.out: scales %g -> %g give no usable "
                     "requantization multiplier", input_scale, output_scale);
  // A window's centered sum is small next to int32 (at most 255 per element): the spare bits let the multiply
  // keep fraction bits through both roundings (see multiply_by_quantized_multiplier_lifted).
  const int headroom = headroom_bits(255 * (h_short + 1) * (w_short + 1));
  constexpr uint32_t kMask = selected_dtypes::adaptive_avg_pool2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::adaptive_avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    // multipliers[a][b]: windows of (h_short + a) x (w_short + b) elements (all checked above).
    QuantizedMultiplier multipliers[2][2];
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        const double count = static_cast<double>((h_short + a) * (w_short + b));
        quantize_multiplier(input_scale / (output_scale * count), &multipliers[a][b]);
      }
    }
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int64_t planes = input.numel() / (H * W);
    const int32_t zp_in = static_cast<int32_t>(input_zero_point);
    const int32_t zp_out = static_cast<int32_t>(output_zero_point);
    for (int64_t p = 0; p < planes; ++p) {
      const int8_t* xp = x + p * H * W;
      int8_t* op = o + p * OH * OW;
      for (int64_t i = 0; i < OH; ++i) {
        const int64_t h0 = window_start(i, H, OH), h1 = window_end(i, H, OH);
        for (int64_t j = 0; j < OW; ++j) {
          const int64_t w0 = window_start(j, W, OW), w1 = window_end(j, W, OW);
          int32_t sum = 0;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) sum += static_cast<int32_t>(xp[h * W + w]);
          }
          // The zero point once per window rather than once per element; |result| <= 255 * window <= INT32_MAX.
          const int64_t centered = sum - static_cast<int64_t>(zp_in) * (h1 - h0) * (w1 - w0);
          const QuantizedMultiplier& m = multipliers[(h1 - h0) - h_short][(w1 - w0) - w_short];
          const int32_t scaled = multiply_by_quantized_multiplier_lifted(static_cast<int32_t>(centered), m, headroom);
          op[i * OW + j] = clamp_to_int8(static_cast<int64_t>(scaled) + zp_out, -128, 127);
        }
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
