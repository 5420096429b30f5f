// ember_quantized::add.out on MVE: four elements per vector, each input lifted and brought to the common scale,
// the sum requantized (kernels/quantized/util/geometry.h's AddPlan, the same checks and plan as the scalar
// kernel, so the same bits). Widening loads take four bytes into four int32 lanes and the narrowing store puts
// them back, so no lane shuffles are needed.
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

struct AddLanes {
  int32x4_t self_multiplier, self_right, other_multiplier, other_right;
  int32x4_t out_multiplier, out_left, out_right, lo, hi;
  int32_t zp_self, zp_other, zp_out;
};

AddLanes add_lanes(const quantized::AddPlan& p) {
  return AddLanes{vdupq_n_s32(p.self.multiplier),
                  vdupq_n_s32(-p.self.right),
                  vdupq_n_s32(p.other.multiplier),
                  vdupq_n_s32(-p.other.right),
                  vdupq_n_s32(p.out.multiplier),
                  vdupq_n_s32(p.out.left),
                  vdupq_n_s32(-p.out.right),
                  vdupq_n_s32(p.activation_min),
                  vdupq_n_s32(p.activation_max),
                  p.zp_self,
                  p.zp_other,
                  p.zp_out};
}

// An input's four elements on the common scale: lifted, then its multiplier (<= 0.5, so no left shift).
inline int32x4_t rescale(int32x4_t q, int32_t zero_point, int32x4_t multiplier, int32x4_t negated_right) {
  const int32x4_t lifted = vshlq_n_s32(vsubq_n_s32(q, zero_point), quantized::kAddLiftBits);
  const int32x4_t zero = vdupq_n_s32(0);
  return requant_steps_lanes(lifted, multiplier, zero, negated_right);
}

inline int32x4_t add4(int32x4_t a, int32x4_t b, const AddLanes& l) {
  const int32x4_t sum = vaddq_s32(rescale(a, l.zp_self, l.self_multiplier, l.self_right),
                                  rescale(b, l.zp_other, l.other_multiplier, l.other_right));
  return to_output_range(requant_steps_lanes(sum, l.out_multiplier, l.out_left, l.out_right), l.zp_out, l.lo, l.hi);
}

void add_elements(const int8_t* a, const int8_t* b, int8_t* o, int32_t n, const AddLanes& l) {
  for (; n >= 4; n -= 4, a += 4, b += 4, o += 4) vstrbq_s32(o, add4(vldrbq_s32(a), vldrbq_s32(b), l));
  if (n > 0) {
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n));
    vstrbq_p_s32(o, add4(vldrbq_z_s32(a, p), vldrbq_z_s32(b, p), l), p);
  }
}

}  // namespace

void quantized_add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  quantized::AddPlan plan;
  if (!quantized::plan_add(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point, output_scale,
                           output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::quantized_add_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::add.out", kMask, self.scalar_type(), [&](auto) {
    add_elements(self.const_data_ptr<int8_t>(), other.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(),
                 static_cast<int32_t>(out.numel()), add_lanes(plan));
  });
}

}  // namespace helium
}  // namespace ember
