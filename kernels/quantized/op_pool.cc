// Quantized average pooling of int8 [N, C, H, W] (or [C, H, W]) tensors: adaptive (output size given) and with a
// fixed window (PyTorch's avg_pool2d: kernel, stride, padding, ceil_mode, count_include_pad, divisor_override).
//
// The average and the change of scale are one fixed-point multiply: out = zp_out + sum(q - zp_in) * M with
// M = input_scale / (output_scale * divisor). The divisor is the window's size (or the override), which differs
// only between windows that meet the border, so each kernel derives multipliers ahead of, or once per change
// of divisor in, its loops rather than per output.
//
// Adaptive: output cell (i, j) averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns likewise: PyTorch's
// rule. Along one dim the rule only ever yields two lengths (ceil(H/OH) and one more, or exactly H/OH when it
// divides), so there are at most four window sizes and four multipliers, all derived before the loops.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;
using portable::PoolGeometry;

// An average over an even number of elements on one scale lands exactly halfway between two codes often (a
// quarter of 2x2 windows): rounded to even, as the reference's quantize rounds it, not away from zero.
constexpr bool kTiesToEven = true;

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
          const int32_t scaled =
              multiply_by_quantized_multiplier_lifted<kTiesToEven>(static_cast<int32_t>(centered), m, headroom);
          op[i * OW + j] = clamp_to_int8(static_cast<int64_t>(scaled) + zp_out, -128, 127);
        }
      }
    }
  });
}

namespace {

// One window of avg_pool2d at output (oh, ow), as ATen bounds it: [h0, h1) x [w0, w1) inside the input, and the
// divisor PyTorch divides its sum by.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow, bool count_include_pad,
                     const Optional<int64_t>& divisor_override) {
  AvgWindow a;
  a.h0 = oh * g.SH - g.PH;
  a.w0 = ow * g.SW - g.PW;
  // The window may reach into the padding but, with ceil_mode, not past it: the padded count stops there.
  const int64_t h_end = a.h0 + g.KH < g.H + g.PH ? a.h0 + g.KH : g.H + g.PH;
  const int64_t w_end = a.w0 + g.KW < g.W + g.PW ? a.w0 + g.KW : g.W + g.PW;
  const int64_t padded = (h_end - a.h0) * (w_end - a.w0);
  a.h1 = h_end < g.H ? h_end : g.H;
  a.w1 = w_end < g.W ? w_end : g.W;
  a.h0 = a.h0 > 0 ? a.h0 : 0;
  a.w0 = a.w0 > 0 ? a.w0 : 0;
  a.divisor = divisor_override.has_value() ? divisor_override.value()
              : count_include_pad          ? padded
                                           : (a.h1 - a.h0) * (a.w1 - a.w0);
  return a;
}

// The centered sum, sum(q - zp), of one window of a plane; |result| <= 255 * window elements.
int32_t window_sum(const int8_t* plane, int64_t W, const AvgWindow& a, int32_t zero_point) {
  int32_t sum = 0;
  for (int64_t h = a.h0; h < a.h1; ++h) {
    for (int64_t w = a.w0; w < a.w1; ++w) sum += static_cast<int32_t>(plane[h * W + w]);
  }
  return sum - zero_point * static_cast<int32_t>((a.h1 - a.h0) * (a.w1 - a.w0));
}

}  // namespace

void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                    bool ceil_mode, bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out) {
  PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK(ctx, portable::pool_geometry(input, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2),
                                                  ceil_mode, &g),
                     InvalidArgument, "ember_quantized::avg_pool2d.out: invalid geometry for a %d-d input (kernel and "
                     "stride in [1, 2^31), padding at most half the kernel, a non-empty output)",
                     static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, input, g), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: out must be the input's shape with a %lldx%lld plane",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::avg_pool2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::avg_pool2d.out: input and out must be int8, got %s and %s",
                     scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: scales must be positive, got %g and %g", input_scale,
                     output_scale);
  EMBER_KERNEL_CHECK(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: zero points %lld and %lld must be int8 values",
                     static_cast<long long>(input_zero_point), static_cast<long long>(output_zero_point));
  EMBER_KERNEL_CHECK(ctx, !divisor_override.has_value() || divisor_override.value() > 0, InvalidArgument,
                     "ember_quantized::avg_pool2d.out: divisor_override must be positive, got %lld",
                     static_cast<long long>(divisor_override.has_value() ? divisor_override.value() : 0));
  EMBER_KERNEL_CHECK(ctx, g.KH * g.KW <= INT32_MAX / 255, NotSupported,
                     "ember_quantized::avg_pool2d.out: a %lldx%lld window could overflow the int32 sum",
                     static_cast<long long>(g.KH), static_cast<long long>(g.KW));
  // The smallest divisor has the largest multiplier: a window has at least one element, or the override.
  const int64_t smallest = divisor_override.has_value() ? divisor_override.value() : 1;
  EMBER_KERNEL_CHECK(ctx, multiplier_in_range(input_scale / (output_scale * static_cast<double>(smallest))),
                     InvalidArgument, "ember_quantized::avg_pool2d.out: scales %g -> %g give no usable "
                     "requantization multiplier", input_scale, output_scale);
  // As in the adaptive kernel: the spare bits above a window's largest centered sum keep fraction bits through
  // the multiply's two roundings.
  const int headroom = headroom_bits(255 * g.KH * g.KW);
  constexpr uint32_t kMask = selected_dtypes::avg_pool2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t zp_in = static_cast<int32_t>(input_zero_point);
    const int32_t zp_out = static_cast<int32_t>(output_zero_point);
    // Interior windows share one divisor; the multiplier is derived again only where a border changes it.
    int64_t divisor = 0;
    QuantizedMultiplier m;
    for (int64_t p = 0; p < g.batch * g.C; ++p) {
      const int8_t* xp = x + p * g.H * g.W;
      int8_t* op = o + p * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const AvgWindow a = avg_window(g, oh, ow, count_include_pad, divisor_override);
          if (a.divisor != divisor) {
            divisor = a.divisor;
            // A window with no input element (divisor 0) sums to 0: any multiplier gives the zero point.
            quantize_multiplier(input_scale / (output_scale * static_cast<double>(divisor > 0 ? divisor : 1)), &m);
          }
          const int32_t scaled =
              multiply_by_quantized_multiplier_lifted<kTiesToEven>(window_sum(xp, g.W, a, zp_in), m, headroom);
          op[oh * g.OW + ow] = clamp_to_int8(static_cast<int64_t>(scaled) + zp_out, -128, 127);
        }
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
