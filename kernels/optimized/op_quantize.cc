// quantized_decomposed::quantize_per_tensor.out from float32 to int8 on x86-64 and aarch64: the scalar kernel's
// float32 steps (x * (1 / scale), rounded to nearest with ties to even, plus the zero point, clamped, NaN to
// quant_min) on the tier's vector lanes (int8/tier_kernels.h), so the bytes are kernels/quantized's. Other output
// dtypes and CPUs go to kernels/quantized/op_quantize.cc, which also reports every refused call.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/int8/level.h"
#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace optimized {

void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::quantize_per_tensor_out_optimized & dtype_bit(ScalarType::Float);
  const TierKernels* k = tier_kernels(int8_level());
  if (!(kMask & dtype_bit(ScalarType::Float)) || k == nullptr || out.scalar_type() != ScalarType::Char ||
      input.scalar_type() != ScalarType::Float) {
    return quantized::quantize_per_tensor_out(ctx, input, scale, zero_point, quant_min, quant_max, dtype, out);
  }
  if (!quantized::check_quantize_per_tensor(ctx, input, scale, quant_min, quant_max, dtype, out)) return;
  // As the scalar kernel: 1 / scale in double, then float32; the bounds lie inside int8 (checked).
  k->quantize(input.const_data_ptr<float>(), input.numel(), static_cast<float>(1.0 / scale),
              static_cast<float>(zero_point), static_cast<float>(quant_min), static_cast<float>(quant_max),
              out.mutable_data_ptr<int8_t>());
}

}  // namespace optimized
}  // namespace ember
