// Quantized elementwise add of two int8 tensors of the same shape, each with its own scale and zero point.
//
// The inputs cannot simply be summed: they live on different scales. Each is brought to a common scale, the
// larger input scale times 2 (so both input multipliers are <= 0.5 and fit Q31 without a left shift), after
// lifting it by 2^20 so the rescaled values keep 20 fraction bits; the sum is then requantized to the output
// scale. |q - zp| <= 255 < 2^8, so the lifted values stay below 2^28 and their sum below 2^29: no overflow.
// Every step is fixed point (util/requantize.h); the float scales only shape the three multipliers, once.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;

constexpr int kLiftBits = 20;

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

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
             double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
             int64_t activation_min, int64_t activation_max, Tensor& out) {
  char self_shape[64], other_shape[64];
  EMBER_KERNEL_CHECK(ctx, portable::same_shape(self, other), InvalidArgument,
                     "ember_quantized::add.out: self %s and other %s must have the same shape (no broadcasting)",
                     shape_text(self.sizes(), self_shape, sizeof(self_shape)),
                     shape_text(other.sizes(), other_shape, sizeof(other_shape)));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, self.sizes()), InvalidArgument,
                     "ember_quantized::add.out: out must have the inputs' shape (%d-d)", static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous() && other.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::add.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == ScalarType::Char && other.scalar_type() == ScalarType::Char &&
                              out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::add.out: self, other and out must be int8, got %s, %s and %s",
                     scalar_type_name(self.scalar_type()), scalar_type_name(other.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, valid_scale(self_scale) && valid_scale(other_scale) && valid_scale(output_scale),
                     InvalidArgument, "ember_quantized::add.out: scales must be positive, got %g, %g and %g",
                     self_scale, other_scale, output_scale);
  EMBER_KERNEL_CHECK(ctx, in_int8_range(self_zero_point) && in_int8_range(other_zero_point) &&
                              in_int8_range(output_zero_point) && in_int8_range(activation_min) &&
                              in_int8_range(activation_max) && activation_min <= activation_max,
                     InvalidArgument, "ember_quantized::add.out: zero points (%lld, %lld, %lld) and activation range "
                     "[%lld, %lld] must be int8 values", static_cast<long long>(self_zero_point),
                     static_cast<long long>(other_zero_point), static_cast<long long>(output_zero_point),
                     static_cast<long long>(activation_min), static_cast<long long>(activation_max));
  const double common = 2.0 * (self_scale > other_scale ? self_scale : other_scale);
  const double out_multiplier = common / (double{1 << kLiftBits} * output_scale);
  EMBER_KERNEL_CHECK(ctx, multiplier_in_range(out_multiplier), InvalidArgument,
                     "ember_quantized::add.out: scales %g, %g -> %g give no usable requantization multiplier",
                     self_scale, other_scale, output_scale);
  constexpr uint32_t kMask = selected_dtypes::add_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::add.out", kMask, self.scalar_type(), [&](auto) {
    // The input multipliers are at most 0.5 by construction, and out_multiplier was checked.
    QuantizedMultiplier m_self, m_other, m_out;
    quantize_multiplier(self_scale / common, &m_self);
    quantize_multiplier(other_scale / common, &m_other);
    quantize_multiplier(out_multiplier, &m_out);
    const int8_t* a = self.const_data_ptr<int8_t>();
    const int8_t* b = other.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t zp_a = static_cast<int32_t>(self_zero_point), zp_b = static_cast<int32_t>(other_zero_point);
    const int32_t zp_out = static_cast<int32_t>(output_zero_point);
    const int32_t lo = static_cast<int32_t>(activation_min), hi = static_cast<int32_t>(activation_max);
    // Both input multipliers are <= 0.5, so |va + vb| <= 255 << kLiftBits.
    const int headroom = headroom_bits(int64_t{255} << kLiftBits);
    for (int64_t i = 0; i < out.numel(); ++i) {
      const int32_t lifted_a = (static_cast<int32_t>(a[i]) - zp_a) * (1 << kLiftBits);
      const int32_t lifted_b = (static_cast<int32_t>(b[i]) - zp_b) * (1 << kLiftBits);
      const int32_t va = multiply_by_quantized_multiplier(lifted_a, m_self);
      const int32_t vb = multiply_by_quantized_multiplier(lifted_b, m_other);
      o[i] = requantize(va + vb, m_out, headroom, zp_out, lo, hi);
    }
  });
}

}  // namespace quantized
}  // namespace ember
