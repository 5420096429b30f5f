// ember_quantized::mul.out on MVE: eight elements per step. Widening loads put eight bytes into 16-bit lanes, where
// the centered inputs (|q - zp| <= 255) fit; the widening multiplies VMULLB/VMULLT give the exact products of the
// even and odd lanes as two vectors of four int32, each requantized (kernels/quantized/util/geometry.h's MulPlan:
// the same checks, plan and broadcast runs as the scalar kernel, so the same bits). Saturating narrows put them
// back into the even and odd 16-bit lanes, where the zero point and the activation clamp apply (saturation keeps
// every value beyond int8 beyond the clamp, so it gives what the 32-bit clamp gives), and a narrowing store writes
// the bytes. Each run is one tail-predicated loop: against the other input's run, or against its one repeated
// element where it is broadcast.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

struct MulLanes {
  int32_t multiplier, left, negated_right;
  int16x8_t lo, hi;
  int16_t zp_self, zp_other, zp_out;
};

MulLanes mul_lanes(const quantized::MulPlan& p) {
  return MulLanes{p.steps.multiplier,
                  p.steps.left,
                  -p.steps.right,
                  vdupq_n_s16(static_cast<int16_t>(p.activation_min)),
                  vdupq_n_s16(static_cast<int16_t>(p.activation_max)),
                  static_cast<int16_t>(p.zp_self),
                  static_cast<int16_t>(p.zp_other),
                  static_cast<int16_t>(p.zp_out)};
}

// Eight outputs from eight centered inputs of each side.
inline int16x8_t mul8(int16x8_t a, int16x8_t b, const MulLanes& l) {
  const int32x4_t even = requant_steps_lanes(vmullbq_int_s16(a, b), l.multiplier, l.left, l.negated_right);
  const int32x4_t odd = requant_steps_lanes(vmulltq_int_s16(a, b), l.multiplier, l.left, l.negated_right);
  const int16x8_t narrow = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), even), odd);
  return vminq_s16(vmaxq_s16(vqaddq_n_s16(narrow, l.zp_out), l.lo), l.hi);
}

// One run of n outputs: `a` steps through it, `b` too when kOtherSteps, else its element b[0] repeats.
template <bool kOtherSteps>
void mul_run(const int8_t* a, const int8_t* b, int8_t* o, int32_t n, const MulLanes& l) {
  const int16x8_t b_repeated = vdupq_n_s16(static_cast<int16_t>(b[0] - l.zp_other));
  for (; n > 0; n -= 8, a += 8, o += 8) {
    const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n));
    const int16x8_t va = vsubq_n_s16(vldrbq_z_s16(a, p), l.zp_self);
    int16x8_t vb = b_repeated;
    if (kOtherSteps) {
      vb = vsubq_n_s16(vldrbq_z_s16(b, p), l.zp_other);
      b += 8;
    }
    vstrbq_p_s16(o, mul8(va, vb, l), p);
  }
}

}  // namespace

void quantized_mul_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  quantized::MulPlan plan;
  if (!quantized::plan_mul(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point,
                           output_scale, output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::quantized_mul_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::mul.out", kMask, self.scalar_type(), [&](auto) {
    const MulLanes l = mul_lanes(plan);
    // The product is symmetric in its two centered inputs: with self the one repeated along the runs, swap the
    // sides so the stepping one is loaded (the zero points swap with them).
    const bool swap = !plan.runs.self_steps && plan.runs.other_steps;
    MulLanes lanes = l;
    if (swap) {
      lanes.zp_self = l.zp_other;
      lanes.zp_other = l.zp_self;
    }
    const int8_t* a = (swap ? other : self).const_data_ptr<int8_t>();
    const int8_t* b = (swap ? self : other).const_data_ptr<int8_t>();
    const bool both_step = plan.runs.self_steps && plan.runs.other_steps;
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t n = static_cast<int32_t>(plan.runs.inner);
    quantized::for_each_run(plan.runs, [&](int64_t self_at, int64_t other_at, int64_t o_at) {
      const int64_t a_at = swap ? other_at : self_at, b_at = swap ? self_at : other_at;
      if (both_step) {
        mul_run<true>(a + a_at, b + b_at, o + o_at, n, lanes);
      } else {
        mul_run<false>(a + a_at, b + b_at, o + o_at, n, lanes);
      }
    });
  });
}

}  // namespace helium
}  // namespace ember
