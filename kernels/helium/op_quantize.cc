// quantize_per_tensor.out from float32 to int8 on MVE, four values per vector: the scalar kernel's
// clamp(nearbyint(x * (1 / scale)) + zero_point) in float32, as VMUL, VRINTN (round to nearest, ties to even),
// VADD, then VMAXNM/VMINNM against the range (a NaN becomes quant_min, as the scalar clamp makes it) and an exact
// conversion. Other output dtypes go to kernels/quantized, which also reports every refused call.
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

inline int32x4_t quantize4(float32x4_t x, float inv_scale, float zp, float32x4_t lo, float32x4_t hi) {
  const float32x4_t v = vaddq_n_f32(vrndnq_f32(vmulq_n_f32(x, inv_scale)), zp);
  return vcvtq_s32_f32(vminnmq_f32(vmaxnmq_f32(v, lo), hi));
}

void quantize_to_int8(const float* x, int8_t* o, int32_t n, float inv_scale, float zp, float lo_f, float hi_f) {
  const float32x4_t lo = vdupq_n_f32(lo_f), hi = vdupq_n_f32(hi_f);
  for (; n >= 4; n -= 4, x += 4, o += 4) vstrbq_s32(o, quantize4(vldrwq_f32(x), inv_scale, zp, lo, hi));
  if (n > 0) {
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n));
    vstrbq_p_s32(o, quantize4(vldrwq_z_f32(x, p), inv_scale, zp, lo, hi), p);
  }
}

}  // namespace

void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out) {
  if (out.scalar_type() != ScalarType::Char) {
    quantized::quantize_per_tensor_out(ctx, input, scale, zero_point, quant_min, quant_max, dtype, out);
    return;
  }
  if (!quantized::check_quantize_per_tensor(ctx, input, scale, quant_min, quant_max, dtype, out)) return;
  constexpr uint32_t kMask = selected_dtypes::quantize_per_tensor_out_helium & dtype_bit(ScalarType::Float);
  EMBER_DISPATCH(ctx, "quantize_per_tensor.out", kMask, input.scalar_type(), [&](auto) {
    // As the scalar kernel: 1 / scale in double, then float32; the bounds lie inside int8 (checked).
    quantize_to_int8(input.const_data_ptr<float>(), out.mutable_data_ptr<int8_t>(), static_cast<int32_t>(input.numel()),
                     static_cast<float>(1.0 / scale), static_cast<float>(zero_point), static_cast<float>(quant_min),
                     static_cast<float>(quant_max));
  });
}

}  // namespace helium
}  // namespace ember
