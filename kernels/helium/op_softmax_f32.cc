// _softmax.out for Float on MVE over the last dim of a contiguous tensor (attention rows, a classifier's scores);
// other dims, dtypes and layouts go to portable. Per row: the maximum (VMAXNMV), then e^(x - max) four lanes at a
// time, stored and summed, then one pass scaling by 1 / sum. NaN and inf give what portable gives: a NaN anywhere
// in a row, or an infinite maximum, makes the row NaN.
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace helium {
namespace {

// e^x for x <= 0 (x - max), within a few ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-5 polynomial
// (Cephes' expf coefficients), 2^n built in the exponent bits. Below -87 the result is clamped to e^-87 (about
// 1.6e-38) rather than flushed to 0; a NaN stays NaN (the clamp's GT is false for it, and so is every step after).
inline float32x4_t exp_nonpositive(float32x4_t x) {
  const float32x4_t floor_x = vdupq_n_f32(-87.0f);
  x = vpselq_f32(floor_x, x, vcmpgtq_f32(floor_x, x));
  const int32x4_t n = vcvtnq_s32_f32(vmulq_n_f32(x, 1.44269504088896341f));
  const float32x4_t fn = vcvtq_f32_s32(n);
  // ln 2 in two parts, the first exact in few bits, so n * ln2_hi is exact.
  float32x4_t r = vfmaq_n_f32(x, fn, -0.693359375f);
  r = vfmaq_n_f32(r, fn, 2.12194440e-4f);
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  const float32x4_t e = vaddq_f32(vfmaq_f32(r, vmulq_f32(p, r), r), vdupq_n_f32(1.0f));
  const int32x4_t scale = vshlq_n_s32(vaddq_n_s32(n, 127), 23);
  return vmulq_f32(e, vreinterpretq_f32_s32(scale));
}

void softmax_row(const float* x, float* o, int32_t n) {
  float max = x[0];
  for (int32_t i = 0; i < n; i += 4) {
    max = vmaxnmvq_p_f32(max, vldrwq_z_f32(x + i, vctp32q(static_cast<uint32_t>(n - i))),
                         vctp32q(static_cast<uint32_t>(n - i)));
  }
  float32x4_t sums = vdupq_n_f32(0.0f);
  for (int32_t i = 0; i < n; i += 4) {
    const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n - i));
    const float32x4_t e = exp_nonpositive(vsubq_n_f32(vldrwq_z_f32(x + i, m), max));
    sums = vaddq_m_f32(sums, sums, e, m);
    vstrwq_p_f32(o + i, e, m);
  }
  const float inverse = 1.0f / ((vgetq_lane_f32(sums, 0) + vgetq_lane_f32(sums, 1)) +
                                (vgetq_lane_f32(sums, 2) + vgetq_lane_f32(sums, 3)));
  for (int32_t i = 0; i < n; i += 4) {
    const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n - i));
    vstrwq_p_f32(o + i, vmulq_n_f32(vldrwq_z_f32(o + i, m), inverse), m);
  }
}

}  // namespace

void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  const int64_t rank = self.dim();
  const bool last = rank > 0 && (dim == rank - 1 || dim == -1);
  if ((selected_dtypes::softmax_out_helium & dtype_bit(ScalarType::Float)) == 0 ||
      self.scalar_type() != ScalarType::Float || half_to_float || !last || !self.is_contiguous() ||
      !out.is_contiguous() || self.numel() > INT32_MAX / 4) {
    return portable::softmax_out(ctx, self, dim, half_to_float, out);
  }
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()) && out.scalar_type() == ScalarType::Float,
                     InvalidArgument, "%s: out must match self's shape and dtype", "_softmax.out");
  const int32_t n = self.size(static_cast<int32_t>(rank - 1));
  if (n == 0) return;
  const int64_t rows = self.numel() / n;
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * n, o + r * n, n);
}

}  // namespace helium
}  // namespace ember
