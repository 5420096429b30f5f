#include "kernels/quantized/util/geometry.h"

#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/channel_params.h"

namespace ember {
namespace quantized {

using portable::fit_output;

namespace {

// "[2, 3, 4]" into buf (truncated to fit), for messages that must show both shapes. No snprintf: the runtime
// builds without stdio.
const char* shape_text(ArrayRef<int32_t> sizes, char* buf, size_t cap) {
  size_t n = 0;
  auto put = [&](char c) {
    if (n + 1 < cap) buf[n++] = c;
  };
  put('[');
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d > 0) {
      put(',');
      put(' ');
    }
    char digits[12];
    int k = 0;
    uint32_t v = sizes[d] < 0 ? 0u : static_cast<uint32_t>(sizes[d]);
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0) put(digits[--k]);
  }
  put(']');
  buf[n] = '\0';
  return buf;
}

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

// The checks ember_quantized::add.out and mul.out share, after their shape checks: contiguous int8 tensors, scales
// and zero points, an activation range inside int8. `op` names the operator in the messages.
bool binary_qparams_ok(KernelContext& ctx, const char* op, const Tensor& self, double self_scale,
                       int64_t self_zero_point, const Tensor& other, double other_scale, int64_t other_zero_point,
                       double output_scale, int64_t output_zero_point, int64_t activation_min, int64_t activation_max,
                       const Tensor& out) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, self.is_contiguous() && other.is_contiguous() && out.is_contiguous(), NotSupported,
                              "%s: only contiguous tensors are supported", op);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              self.scalar_type() == ScalarType::Char && other.scalar_type() == ScalarType::Char &&
                                  out.scalar_type() == ScalarType::Char,
                              InvalidArgument, "%s: self, other and out must be int8, got %s, %s and %s", op,
                              scalar_type_name(self.scalar_type()), scalar_type_name(other.scalar_type()),
                              scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, valid_scale(self_scale) && valid_scale(other_scale) && valid_scale(output_scale),
                              InvalidArgument, "%s: scales must be positive, got %g, %g and %g", op, self_scale,
                              other_scale, output_scale);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              in_int8_range(self_zero_point) && in_int8_range(other_zero_point) &&
                                  in_int8_range(output_zero_point) && in_int8_range(activation_min) &&
                                  in_int8_range(activation_max) && activation_min <= activation_max,
                              InvalidArgument,
                              "%s: zero points (%lld, %lld, %lld) and activation range [%lld, %lld] "
                              "must be int8 values",
                              op, static_cast<long long>(self_zero_point), static_cast<long long>(other_zero_point),
                              static_cast<long long>(output_zero_point), static_cast<long long>(activation_min),
                              static_cast<long long>(activation_max));
  return true;
}

}  // namespace

bool conv2d_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, ArrayRef<int64_t> stride,
                     ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, Tensor& out,
                     Conv2dGeometry* g) {
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, input.dim() == 4 && weight.dim() == 4, InvalidArgument,
      "ember_quantized::conv2d.out: input and weight must be 4-d (NCHW, OIHW), got %d-d and %d-d",
      static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              (stride.size() == 1 || stride.size() == 2) &&
                                  (padding.size() == 1 || padding.size() == 2) &&
                                  (dilation.size() == 1 || dilation.size() == 2),
                              InvalidArgument,
                              "ember_quantized::conv2d.out: stride, padding and dilation need 1 or 2 values, "
                              "got %d, %d and %d",
                              static_cast<int>(stride.size()), static_cast<int>(padding.size()),
                              static_cast<int>(dilation.size()));
  const int64_t N = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  const int64_t OC = weight.size(0), Cg = weight.size(1), KH = weight.size(2), KW = weight.size(3);
  const int64_t sh = stride[0], sw = stride[stride.size() - 1];
  const int64_t ph = padding[0], pw = padding[padding.size() - 1];
  const int64_t dh = dilation[0], dw = dilation[dilation.size() - 1];
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, groups > 0 && C % groups == 0 && OC % groups == 0 && Cg == C / groups, InvalidArgument,
      "ember_quantized::conv2d.out: %lld input channels, %lld output channels and %lld groups do not "
      "fit a weight of %lld channels per group",
      static_cast<long long>(C), static_cast<long long>(OC), static_cast<long long>(groups),
      static_cast<long long>(Cg));
  // Bounded by int32 as tensor sizes are, so the output size arithmetic below cannot overflow int64.
  auto fits = [](int64_t v, int64_t lo) { return v >= lo && v <= INT32_MAX; };
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              fits(sh, 1) && fits(sw, 1) && fits(dh, 1) && fits(dw, 1) && fits(ph, 0) && fits(pw, 0),
                              InvalidArgument,
                              "ember_quantized::conv2d.out: stride and dilation must be in [1, 2^31), padding "
                              "in [0, 2^31)");
  const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
  const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, KH > 0 && KW > 0 && OH > 0 && OW > 0, InvalidArgument,
      "ember_quantized::conv2d.out: a %lldx%lld kernel (dilation %lldx%lld) does not fit the padded "
      "%lldx%lld input",
      static_cast<long long>(KH), static_cast<long long>(KW), static_cast<long long>(dh), static_cast<long long>(dw),
      static_cast<long long>(H + 2 * ph), static_cast<long long>(W + 2 * pw));
  const int64_t shape[4] = {N, OC, OH, OW};
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, shape, 4), InvalidArgument,
                              "ember_quantized::conv2d.out: out must be [%lld, %lld, %lld, %lld]",
                              static_cast<long long>(N), static_cast<long long>(OC), static_cast<long long>(OH),
                              static_cast<long long>(OW));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                              "ember_quantized::conv2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                              InvalidArgument, "ember_quantized::conv2d.out: input and out must be int8, got %s and %s",
                              scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  // The weights, scales, bias, zero points and activation range were checked, and folded into per-channel
  // constants, by conv2d_prepare.
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, prepared_for(ctx.state<RequantHeader>(), OC, Cg * KH * KW), InvalidState,
      "ember_quantized::conv2d.out: the weight is not the one its prepare step saw at load (or the "
      "kernel was called without it)");
  *g = Conv2dGeometry{N, C, H, W, OC, Cg, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, groups};
  return true;
}

bool linear_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, Tensor& out, LinearGeometry* g) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.dim() >= 1 && weight.dim() == 2, InvalidArgument,
                              "ember_quantized::linear.out: input must be [..., in_features] and weight [out_features, "
                              "in_features], got %d-d and %d-d",
                              static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  const int64_t IC = input.size(input.dim() - 1), OC = weight.size(0);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.size(1) == IC, InvalidArgument,
                              "ember_quantized::linear.out: input has %lld features but weight expects %lld",
                              static_cast<long long>(IC), static_cast<long long>(weight.size(1)));
  int32_t shape[kMaxTensorDim];
  for (int32_t d = 0; d + 1 < input.dim(); ++d) shape[d] = input.size(d);
  shape[input.dim() - 1] = static_cast<int32_t>(OC);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, shape, static_cast<size_t>(input.dim())), InvalidArgument,
                              "ember_quantized::linear.out: out must be the input's shape with %lld features",
                              static_cast<long long>(OC));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                              "ember_quantized::linear.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                              InvalidArgument, "ember_quantized::linear.out: input and out must be int8, got %s and %s",
                              scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, prepared_for(ctx.state<RequantHeader>(), OC, IC), InvalidState,
      "ember_quantized::linear.out: the weight is not the one its prepare step saw at load (or the "
      "kernel was called without it)");
  int64_t rows = 1;
  for (int32_t d = 0; d + 1 < input.dim(); ++d) rows *= input.size(d);
  *g = LinearGeometry{rows, IC, OC};
  return true;
}

Error check_linear_at_load(const KernelArgs& args, RequantHeader* header) {
  if (!args.shapes_fixed()) return Error::Ok;
  // linear.out(input, ..., weight (3), ..., out): the loaded tensors; the handles share their TensorImpls.
  Tensor out = *args.tensor(args.size() - 1);
  KernelContext ctx(header, Span<uint8_t>());
  LinearGeometry g;
  if (!linear_geometry(ctx, *args.tensor(0), *args.tensor(3), out, &g)) return ctx.failure();
  // Sizes are int32, so a row count past it means a tensor of more than 2^31 elements: left to execute's checks.
  if (g.rows > 0 && g.rows <= INT32_MAX) header->checked_rows = static_cast<int32_t>(g.rows);
  return Error::Ok;
}

bool plan_add(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
              double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
              int64_t activation_min, int64_t activation_max, Tensor& out, AddPlan* plan) {
  char self_shape[64], other_shape[64];
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, portable::same_shape(self, other), InvalidArgument,
      "ember_quantized::add.out: self %s and other %s must have the same shape (no broadcasting)",
      shape_text(self.sizes(), self_shape, sizeof(self_shape)),
      shape_text(other.sizes(), other_shape, sizeof(other_shape)));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, self.sizes()), InvalidArgument,
                              "ember_quantized::add.out: out must have the inputs' shape (%d-d)",
                              static_cast<int>(self.dim()));
  if (!binary_qparams_ok(ctx, "ember_quantized::add.out", self, self_scale, self_zero_point, other, other_scale,
                         other_zero_point, output_scale, output_zero_point, activation_min, activation_max, out)) {
    return false;
  }
  const double common = 2.0 * (self_scale > other_scale ? self_scale : other_scale);
  const double out_multiplier = common / (double{1 << kAddLiftBits} * output_scale);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, multiplier_in_range(out_multiplier), InvalidArgument,
                              "ember_quantized::add.out: scales %g, %g -> %g give no usable requantization multiplier",
                              self_scale, other_scale, output_scale);
  // The input multipliers are at most 0.5 by construction, and out_multiplier was checked.
  QuantizedMultiplier m_self, m_other, m_out;
  quantize_multiplier(self_scale / common, &m_self);
  quantize_multiplier(other_scale / common, &m_other);
  quantize_multiplier(out_multiplier, &m_out);
  // Both input multipliers are <= 0.5, so the rescaled sum is at most 255 << kAddLiftBits.
  const int headroom = headroom_bits(int64_t{255} << kAddLiftBits);
  *plan = AddPlan{unlifted_steps(m_self),
                  unlifted_steps(m_other),
                  requant_steps(m_out, headroom),
                  static_cast<int32_t>(self_zero_point),
                  static_cast<int32_t>(other_zero_point),
                  static_cast<int32_t>(output_zero_point),
                  static_cast<int32_t>(activation_min),
                  static_cast<int32_t>(activation_max)};
  return true;
}

bool plan_mul(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
              double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
              int64_t activation_min, int64_t activation_max, Tensor& out, MulPlan* plan) {
  int32_t shape[kMaxTensorDim];
  const int rank = portable::broadcast_shape(self.sizes(), other.sizes(), shape);
  char self_shape[64], other_shape[64];
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, rank >= 0, InvalidArgument,
                              "ember_quantized::mul.out: self %s and other %s do not broadcast",
                              shape_text(self.sizes(), self_shape, sizeof(self_shape)),
                              shape_text(other.sizes(), other_shape, sizeof(other_shape)));
  const ArrayRef<int32_t> out_sizes(shape, static_cast<size_t>(rank));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, out_sizes), InvalidArgument,
                              "ember_quantized::mul.out: out must have the inputs' broadcast shape %s",
                              shape_text(out_sizes, self_shape, sizeof(self_shape)));
  if (!binary_qparams_ok(ctx, "ember_quantized::mul.out", self, self_scale, self_zero_point, other, other_scale,
                         other_zero_point, output_scale, output_zero_point, activation_min, activation_max, out)) {
    return false;
  }
  const double multiplier = self_scale * other_scale / output_scale;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, multiplier_in_range(multiplier), InvalidArgument,
                              "ember_quantized::mul.out: scales %g * %g -> %g give no usable requantization multiplier",
                              self_scale, other_scale, output_scale);
  QuantizedMultiplier m;
  quantize_multiplier(multiplier, &m);
  *plan = MulPlan{requant_steps(m, headroom_bits(255 * 255)),
                  static_cast<int32_t>(self_zero_point),
                  static_cast<int32_t>(other_zero_point),
                  static_cast<int32_t>(output_zero_point),
                  static_cast<int32_t>(activation_min),
                  static_cast<int32_t>(activation_max),
                  broadcast_runs(self.sizes(), other.sizes(), out_sizes)};
  return true;
}

bool plan_adaptive_avg_pool(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                            ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point, Tensor& out,
                            PoolPlan* plan) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.dim() == 3 || input.dim() == 4, InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: input must be 3-d or 4-d, got %d-d",
                              static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, output_size.size() == 2 && output_size[0] > 0 && output_size[1] > 0, InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: output_size must be two positive sizes");
  const int32_t rank = input.dim();
  const int64_t H = input.size(rank - 2), W = input.size(rank - 1);
  const int64_t OH = output_size[0], OW = output_size[1];
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, H > 0 && W > 0, InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: cannot pool an empty %lldx%lld plane",
                              static_cast<long long>(H), static_cast<long long>(W));
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, H * W <= INT32_MAX / 255, NotSupported,
      "ember_quantized::adaptive_avg_pool2d.out: a %lldx%lld plane could overflow the int32 sum",
      static_cast<long long>(H), static_cast<long long>(W));
  int32_t shape[4];
  for (int32_t d = 0; d < rank - 2; ++d) shape[d] = input.size(d);
  shape[rank - 2] = static_cast<int32_t>(OH);
  shape[rank - 1] = static_cast<int32_t>(OW);
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, fit_output(out, shape, static_cast<size_t>(rank)), InvalidArgument,
      "ember_quantized::adaptive_avg_pool2d.out: out must be the input's shape with a %lldx%lld plane",
      static_cast<long long>(OH), static_cast<long long>(OW));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                              "ember_quantized::adaptive_avg_pool2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                              InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: input and out must be int8, got %s "
                              "and %s",
                              scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: scales must be positive, got %g and %g",
                              input_scale, output_scale);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point), InvalidArgument,
                              "ember_quantized::adaptive_avg_pool2d.out: zero points %lld and %lld must be int8 values",
                              static_cast<long long>(input_zero_point), static_cast<long long>(output_zero_point));
  int64_t h_short = 0, w_short = 0;
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, window_lengths(H, OH, &h_short) && window_lengths(W, OW, &w_short), InvalidArgument,
      "ember_quantized::adaptive_avg_pool2d.out: windows of %lldx%lld -> %lldx%lld vary by more than 1",
      static_cast<long long>(H), static_cast<long long>(W), static_cast<long long>(OH), static_cast<long long>(OW));
  // The smallest window has the largest multiplier: if it is usable, all four are.
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, multiplier_in_range(input_scale / (output_scale * static_cast<double>(h_short * w_short))), InvalidArgument,
      "ember_quantized::adaptive_avg_pool2d.out: scales %g -> %g give no usable "
      "requantization multiplier",
      input_scale, output_scale);
  // A window's centered sum is small next to int32 (at most 255 per element): the spare bits let the multiply
  // keep fraction bits through both roundings (see multiply_by_quantized_multiplier_lifted).
  const int headroom = headroom_bits(255 * (h_short + 1) * (w_short + 1));
  // multipliers[a][b]: windows of (h_short + a) x (w_short + b) elements (all checked above).
  PoolPlan p{H,
             W,
             OH,
             OW,
             h_short,
             w_short,
             {},
             static_cast<int32_t>(input_zero_point),
             static_cast<int32_t>(output_zero_point)};
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      const double count = static_cast<double>((h_short + a) * (w_short + b));
      QuantizedMultiplier m;
      quantize_multiplier(input_scale / (output_scale * count), &m);
      p.steps[a][b] = requant_steps(m, headroom);
    }
  }
  *plan = p;
  return true;
}

bool plan_avg_pool(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                   ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, bool ceil_mode,
                   bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                   int64_t output_zero_point, Tensor& out, AvgPoolPlan* plan) {
  portable::PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              portable::pool_geometry(input, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2),
                                                      ceil_mode, &g),
                              InvalidArgument,
                              "ember_quantized::avg_pool2d.out: invalid geometry for a %d-d input "
                              "(kernel and stride in [1, 2^31), padding at most half the kernel, a non-empty output)",
                              static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, portable::fit_pooled(out, input, g), InvalidArgument,
                              "ember_quantized::avg_pool2d.out: out must be the input's shape with a %lldx%lld plane",
                              static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                              "ember_quantized::avg_pool2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                              InvalidArgument,
                              "ember_quantized::avg_pool2d.out: input and out must be int8, got %s "
                              "and %s",
                              scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                              "ember_quantized::avg_pool2d.out: scales must be positive, got %g and %g", input_scale,
                              output_scale);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point), InvalidArgument,
                              "ember_quantized::avg_pool2d.out: zero points %lld and %lld must be int8 values",
                              static_cast<long long>(input_zero_point), static_cast<long long>(output_zero_point));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, !divisor_override.has_value() || divisor_override.value() > 0, InvalidArgument,
                              "ember_quantized::avg_pool2d.out: divisor_override must be positive, got %lld",
                              static_cast<long long>(divisor_override.has_value() ? divisor_override.value() : 0));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, g.KH * g.KW <= INT32_MAX / 255, NotSupported,
                              "ember_quantized::avg_pool2d.out: a %lldx%lld window could overflow the int32 sum",
                              static_cast<long long>(g.KH), static_cast<long long>(g.KW));
  // The smallest divisor has the largest multiplier: a window has at least one element, or the override.
  const int64_t smallest = divisor_override.has_value() ? divisor_override.value() : 1;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, multiplier_in_range(input_scale / (output_scale * static_cast<double>(smallest))),
                              InvalidArgument,
                              "ember_quantized::avg_pool2d.out: scales %g -> %g give no usable "
                              "requantization multiplier",
                              input_scale, output_scale);
  // As in the adaptive pool: the spare bits above a window's largest centered sum keep fraction bits through the
  // multiply's two roundings.
  *plan = AvgPoolPlan{g,
                      input_scale,
                      output_scale,
                      static_cast<int32_t>(input_zero_point),
                      static_cast<int32_t>(output_zero_point),
                      headroom_bits(255 * g.KH * g.KW),
                      count_include_pad,
                      divisor_override};
  return true;
}

const RequantSteps& avg_pool_steps(const AvgPoolPlan& p, int64_t divisor, AvgPoolSteps* cache) {
  if (divisor != cache->divisor) {
    cache->divisor = divisor;
    // A window with no input element (divisor 0) sums to 0: any multiplier gives the zero point.
    QuantizedMultiplier m;
    quantize_multiplier(p.input_scale / (p.output_scale * static_cast<double>(divisor > 0 ? divisor : 1)), &m);
    cache->steps = requant_steps(m, p.headroom);
  }
  return cache->steps;
}

int8_t avg_pool_window(const AvgPoolPlan& p, const int8_t* plane, int64_t oh, int64_t ow, AvgPoolSteps* cache) {
  const AvgWindow a = avg_window(p, oh, ow);
  int32_t sum = 0;
  for (int64_t h = a.h0; h < a.h1; ++h) {
    for (int64_t w = a.w0; w < a.w1; ++w) sum += static_cast<int32_t>(plane[h * p.g.W + w]);
  }
  // The zero point once per window; |centered| <= 255 * window elements, which the plan's checks keep in int32.
  const int32_t centered = sum - p.zp_in * static_cast<int32_t>((a.h1 - a.h0) * (a.w1 - a.w0));
  const int32_t scaled = apply_requant_steps<true>(centered, avg_pool_steps(p, a.divisor, cache));
  return clamp_to_int8(static_cast<int64_t>(scaled) + p.zp_out, -128, 127);
}

}  // namespace quantized
}  // namespace ember
