// quantize/dequantize, per tensor and per channel: the edges of the int8 domain. These follow PyTorch's
// quantized_decomposed reference bit for bit, including the precision it computes in, because exported graphs
// put them around float ops whose results are compared with eager:
//   quantize:   clamp(nearbyint(x * (1 / scale)) + zero_point, quant_min, quant_max), in float32 for a float
//               scale (PyTorch casts the Python scalar to the tensor's float32), in the scales' dtype per channel
//   dequantize: (q - zero_point) * scale, in the output dtype per tensor, in the scales' dtype per channel
// They are float ops by nature; the requantizing kernels (conv, linear, add, pool) are the fixed-point ones.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;

constexpr uint32_t kQuantizedTypes = dtype_bit(ScalarType::Byte) | dtype_bit(ScalarType::Char) |
                                     dtype_bit(ScalarType::Short) | dtype_bit(ScalarType::Int);
constexpr uint32_t kFloatTypes = dtype_bit(ScalarType::Float);

// quant_min/quant_max must lie in the quantized dtype's range (PyTorch asserts the same).
bool bounds_fit(ScalarType t, int64_t qmin, int64_t qmax) {
  int64_t lo = 0, hi = 0;
  switch (t) {
    case ScalarType::Byte: lo = 0, hi = 255; break;
    case ScalarType::Char: lo = -128, hi = 127; break;
    case ScalarType::Short: lo = INT16_MIN, hi = INT16_MAX; break;
    case ScalarType::Int: lo = INT32_MIN, hi = INT32_MAX; break;
    default: return false;
  }
  return qmin >= lo && qmax <= hi && qmin <= qmax;
}

bool is_quantized_type(ScalarType t) { return (kQuantizedTypes >> static_cast<int>(t)) & 1u; }

bool valid_dtype_arg(int64_t v) { return v >= 0 && v < static_cast<int64_t>(kNumScalarTypes); }

// Clamp a rounded float to [qmin, qmax] before converting, so an out-of-range value (or inf) never reaches an
// undefined float-to-int conversion. NaN has no defined quantized value; it maps to quant_min.
template <typename F>
int64_t clamp_rounded(F v, int64_t qmin, int64_t qmax) {
  if (!(v > static_cast<F>(qmin))) return qmin;
  if (!(v < static_cast<F>(qmax))) return qmax;
  return static_cast<int64_t>(v);
}

// The shape and layout checks the per-channel ops share: `axis` normalized, channel count and the
// outer/inner extents around it.
struct ChannelLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelLayout channel_layout(const Tensor& t, int64_t axis) {
  ChannelLayout l;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < axis) l.outer *= t.size(static_cast<int32_t>(d));
    if (d > axis) l.inner *= t.size(static_cast<int32_t>(d));
  }
  l.channels = t.size(static_cast<int32_t>(axis));
  return l;
}

int64_t zero_point_at(const Tensor& zp, int64_t i) {
  return zp.scalar_type() == ScalarType::Long ? zp.const_data_ptr<int64_t>()[i]
                                              : static_cast<int64_t>(zp.const_data_ptr<int32_t>()[i]);
}

bool is_zero_point_dtype(ScalarType t) { return t == ScalarType::Long || t == ScalarType::Int; }

// Round half to even in the current (default: to-nearest) mode, as torch.round does; per precision, so a
// float32 value is never widened and rounded differently.
inline float round_half_even(float v) { return nearbyintf(v); }
inline double round_half_even(double v) { return nearbyint(v); }

}  // namespace

bool check_quantize_per_tensor(KernelContext& ctx, const Tensor& input, double scale, int64_t quant_min,
                               int64_t quant_max, int64_t dtype, Tensor& out) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, input.sizes()), InvalidArgument,
                              "quantize_per_tensor.out: out must have the input's shape (%d-d)",
                              static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                              "quantize_per_tensor.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, valid_dtype_arg(dtype) && static_cast<ScalarType>(dtype) == out.scalar_type(),
                              InvalidArgument,
                              "quantize_per_tensor.out: dtype argument %lld does not match out's dtype %s",
                              static_cast<long long>(dtype), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Float, InvalidArgument,
                              "quantize_per_tensor.out: input must be float32, got %s",
                              scalar_type_name(input.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              is_quantized_type(out.scalar_type()) &&
                                  bounds_fit(out.scalar_type(), quant_min, quant_max),
                              InvalidArgument, "quantize_per_tensor.out: [%lld, %lld] is not a valid range of %s",
                              static_cast<long long>(quant_min), static_cast<long long>(quant_max),
                              scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, valid_scale(scale), InvalidArgument,
                              "quantize_per_tensor.out: scale %g must be positive", scale);
  return true;
}

void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out) {
  if (!check_quantize_per_tensor(ctx, input, scale, quant_min, quant_max, dtype, out)) return;
  constexpr uint32_t kMask = selected_dtypes::quantize_per_tensor_out_quantized;
  EMBER_DISPATCH(ctx, "quantize_per_tensor.out", kMask & kFloatTypes, input.scalar_type(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    EMBER_DISPATCH(ctx, "quantize_per_tensor.out", kMask & kQuantizedTypes, out.scalar_type(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* x = input.const_data_ptr<In>();
      Out* o = out.mutable_data_ptr<Out>();
      const float inv_scale = static_cast<float>(1.0 / scale);
      const float zp = static_cast<float>(zero_point);
      for (int64_t i = 0; i < input.numel(); ++i) {
        o[i] = static_cast<Out>(
            clamp_rounded(round_half_even(static_cast<float>(x[i]) * inv_scale) + zp, quant_min, quant_max));
      }
    });
  });
}

void dequantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                               int64_t quant_min, int64_t quant_max, int64_t dtype, Optional<int64_t> out_dtype,
                               Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, fit_output(out, input.sizes()), InvalidArgument,
                     "dequantize_per_tensor.out: out must have the input's shape (%d-d)",
                     static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "dequantize_per_tensor.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK(ctx, valid_dtype_arg(dtype) && static_cast<ScalarType>(dtype) == input.scalar_type(),
                     InvalidArgument, "dequantize_per_tensor.out: dtype argument %lld does not match input's dtype %s",
                     static_cast<long long>(dtype), scalar_type_name(input.scalar_type()));
  EMBER_KERNEL_CHECK(ctx,
                     is_quantized_type(input.scalar_type()) && bounds_fit(input.scalar_type(), quant_min, quant_max),
                     InvalidArgument, "dequantize_per_tensor.out: input %s with range [%lld, %lld] is not quantized",
                     scalar_type_name(input.scalar_type()), static_cast<long long>(quant_min),
                     static_cast<long long>(quant_max));
  const ScalarType want = out_dtype.has_value() && valid_dtype_arg(out_dtype.value())
                              ? static_cast<ScalarType>(out_dtype.value())
                              : ScalarType::Float;
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == want && (!out_dtype.has_value() || valid_dtype_arg(out_dtype.value())),
                     InvalidArgument, "dequantize_per_tensor.out: out is %s, out_dtype asks for %s",
                     scalar_type_name(out.scalar_type()), scalar_type_name(want));
  EMBER_KERNEL_CHECK(ctx, want == ScalarType::Float, NotSupported,
                     "dequantize_per_tensor.out: out_dtype %s is not supported (float32 only)", scalar_type_name(want));
  EMBER_KERNEL_CHECK(ctx, valid_scale(scale), InvalidArgument, "dequantize_per_tensor.out: scale %g must be positive",
                     scale);
  constexpr uint32_t kMask = selected_dtypes::dequantize_per_tensor_out_quantized;
  EMBER_DISPATCH(ctx, "dequantize_per_tensor.out", kMask & kQuantizedTypes, input.scalar_type(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    EMBER_DISPATCH(ctx, "dequantize_per_tensor.out", kMask & kFloatTypes, out.scalar_type(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* x = input.const_data_ptr<In>();
      Out* o = out.mutable_data_ptr<Out>();
      const Out s = static_cast<Out>(scale);
      const Out zp = static_cast<Out>(zero_point);
      for (int64_t i = 0; i < input.numel(); ++i) o[i] = (static_cast<Out>(x[i]) - zp) * s;
    });
  });
}

void quantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales, const Tensor& zero_points,
                              int64_t axis, int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, axis >= -input.dim() && axis < input.dim(), InvalidArgument,
                     "quantize_per_channel.out: axis %lld is out of range for a %d-d input",
                     static_cast<long long>(axis), static_cast<int>(input.dim()));
  if (axis < 0) axis += input.dim();
  const ChannelLayout l = channel_layout(input, axis);
  EMBER_KERNEL_CHECK(ctx,
                     scales.dim() == 1 && scales.numel() == l.channels && zero_points.dim() == 1 &&
                         zero_points.numel() == l.channels,
                     InvalidArgument,
                     "quantize_per_channel.out: scales and zero_points need %lld elements (the size "
                     "of axis %lld), got %lld and %lld",
                     static_cast<long long>(l.channels), static_cast<long long>(axis),
                     static_cast<long long>(scales.numel()), static_cast<long long>(zero_points.numel()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, input.sizes()), InvalidArgument,
                     "quantize_per_channel.out: out must have the input's shape (%d-d)", static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "quantize_per_channel.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK(ctx, valid_dtype_arg(dtype) && static_cast<ScalarType>(dtype) == out.scalar_type(),
                     InvalidArgument, "quantize_per_channel.out: dtype argument %lld does not match out's dtype %s",
                     static_cast<long long>(dtype), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Float, InvalidArgument,
                     "quantize_per_channel.out: input must be float32, got %s", scalar_type_name(input.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, is_scale_dtype(scales.scalar_type()) && is_zero_point_dtype(zero_points.scalar_type()),
                     InvalidArgument,
                     "quantize_per_channel.out: scales must be float32/float64 and zero_points "
                     "int64/int32, got %s and %s",
                     scalar_type_name(scales.scalar_type()), scalar_type_name(zero_points.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, is_quantized_type(out.scalar_type()) && bounds_fit(out.scalar_type(), quant_min, quant_max),
                     InvalidArgument, "quantize_per_channel.out: [%lld, %lld] is not a valid range of %s",
                     static_cast<long long>(quant_min), static_cast<long long>(quant_max),
                     scalar_type_name(out.scalar_type()));
  for (int64_t c = 0; c < l.channels; ++c) {
    EMBER_KERNEL_CHECK(ctx, valid_scale(scale_at(scales, c)), InvalidArgument,
                       "quantize_per_channel.out: scale %g of channel %lld must be positive", scale_at(scales, c),
                       static_cast<long long>(c));
  }
  constexpr uint32_t kMask = selected_dtypes::quantize_per_channel_out_quantized;
  EMBER_DISPATCH(ctx, "quantize_per_channel.out", kMask & kFloatTypes, input.scalar_type(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    EMBER_DISPATCH(ctx, "quantize_per_channel.out", kMask & kQuantizedTypes, out.scalar_type(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      // PyTorch promotes float32 input times float64 scales to float64: compute in the scales' dtype.
      auto run = [&](auto scale_zero) {
        using S = decltype(scale_zero);
        const In* x = input.const_data_ptr<In>();
        Out* o = out.mutable_data_ptr<Out>();
        const S* sc = scales.const_data_ptr<S>();
        for (int64_t a = 0; a < l.outer; ++a) {
          for (int64_t c = 0; c < l.channels; ++c) {
            const S inv = S(1) / sc[c];
            const S zp = static_cast<S>(zero_point_at(zero_points, c));
            const int64_t base = (a * l.channels + c) * l.inner;
            for (int64_t i = 0; i < l.inner; ++i) {
              o[base + i] = static_cast<Out>(
                  clamp_rounded(round_half_even(static_cast<S>(x[base + i]) * inv) + zp, quant_min, quant_max));
            }
          }
        }
      };
      if (scales.scalar_type() == ScalarType::Double) {
        run(0.0);
      } else {
        run(0.0f);
      }
    });
  });
}

void dequantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t quant_min, int64_t quant_max,
                                int64_t dtype, Optional<int64_t> out_dtype, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, axis >= -input.dim() && axis < input.dim(), InvalidArgument,
                     "dequantize_per_channel.out: axis %lld is out of range for a %d-d input",
                     static_cast<long long>(axis), static_cast<int>(input.dim()));
  if (axis < 0) axis += input.dim();
  const ChannelLayout l = channel_layout(input, axis);
  EMBER_KERNEL_CHECK(ctx,
                     scales.dim() == 1 && scales.numel() == l.channels &&
                         (zero_points == nullptr || (zero_points->dim() == 1 && zero_points->numel() == l.channels)),
                     InvalidArgument,
                     "dequantize_per_channel.out: scales and zero_points need %lld elements (the "
                     "size of axis %lld), got %lld and %lld",
                     static_cast<long long>(l.channels), static_cast<long long>(axis),
                     static_cast<long long>(scales.numel()),
                     static_cast<long long>(zero_points ? zero_points->numel() : l.channels));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, input.sizes()), InvalidArgument,
                     "dequantize_per_channel.out: out must have the input's shape (%d-d)",
                     static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "dequantize_per_channel.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK(ctx, valid_dtype_arg(dtype) && static_cast<ScalarType>(dtype) == input.scalar_type(),
                     InvalidArgument, "dequantize_per_channel.out: dtype argument %lld does not match input's dtype %s",
                     static_cast<long long>(dtype), scalar_type_name(input.scalar_type()));
  EMBER_KERNEL_CHECK(ctx,
                     is_quantized_type(input.scalar_type()) && bounds_fit(input.scalar_type(), quant_min, quant_max),
                     InvalidArgument, "dequantize_per_channel.out: input %s with range [%lld, %lld] is not quantized",
                     scalar_type_name(input.scalar_type()), static_cast<long long>(quant_min),
                     static_cast<long long>(quant_max));
  const ScalarType want = out_dtype.has_value() && valid_dtype_arg(out_dtype.value())
                              ? static_cast<ScalarType>(out_dtype.value())
                              : ScalarType::Float;
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == want && (!out_dtype.has_value() || valid_dtype_arg(out_dtype.value())),
                     InvalidArgument, "dequantize_per_channel.out: out is %s, out_dtype asks for %s",
                     scalar_type_name(out.scalar_type()), scalar_type_name(want));
  EMBER_KERNEL_CHECK(ctx, want == ScalarType::Float, NotSupported,
                     "dequantize_per_channel.out: out_dtype %s is not supported (float32 only)",
                     scalar_type_name(want));
  EMBER_KERNEL_CHECK(ctx,
                     is_scale_dtype(scales.scalar_type()) &&
                         (zero_points == nullptr || is_zero_point_dtype(zero_points->scalar_type())),
                     InvalidArgument,
                     "dequantize_per_channel.out: scales must be float32/float64 and zero_points "
                     "int64/int32");
  // (q - zero_point) is computed in int64: a zero point beyond int32 (no quantized dtype has one) could overflow it.
  for (int64_t c = 0; zero_points != nullptr && c < l.channels; ++c) {
    const int64_t zp = zero_point_at(*zero_points, c);
    EMBER_KERNEL_CHECK(ctx, zp >= INT32_MIN && zp <= INT32_MAX, InvalidArgument,
                       "dequantize_per_channel.out: zero point %lld of channel %lld is outside int32",
                       static_cast<long long>(zp), static_cast<long long>(c));
  }
  constexpr uint32_t kMask = selected_dtypes::dequantize_per_channel_out_quantized;
  EMBER_DISPATCH(ctx, "dequantize_per_channel.out", kMask & kQuantizedTypes, input.scalar_type(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    EMBER_DISPATCH(ctx, "dequantize_per_channel.out", kMask & kFloatTypes, out.scalar_type(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      // (q - zero_point) is exact in int64; the product rounds once, in the scales' dtype as PyTorch's type
      // promotion does, then converts to the output dtype.
      auto run = [&](auto scale_zero) {
        using S = decltype(scale_zero);
        const In* x = input.const_data_ptr<In>();
        Out* o = out.mutable_data_ptr<Out>();
        const S* sc = scales.const_data_ptr<S>();
        for (int64_t a = 0; a < l.outer; ++a) {
          for (int64_t c = 0; c < l.channels; ++c) {
            const S s = sc[c];
            const int64_t zp = zero_points ? zero_point_at(*zero_points, c) : 0;
            const int64_t base = (a * l.channels + c) * l.inner;
            for (int64_t i = 0; i < l.inner; ++i) {
              o[base + i] = static_cast<Out>(static_cast<S>(static_cast<int64_t>(x[base + i]) - zp) * s);
            }
          }
        }
      };
      if (scales.scalar_type() == ScalarType::Double) {
        run(0.0);
      } else {
        run(0.0f);
      }
    });
  });
}

}  // namespace quantized
}  // namespace ember
