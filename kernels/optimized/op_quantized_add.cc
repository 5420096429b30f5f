// ember_quantized::add.out on x86-64 and aarch64: quantized::add_one's steps (both inputs lifted by 2^20 and rescaled
// to a common scale, the sum requantized; kernels/quantized/util/geometry.h's plan) on the tier's vector lanes
// (int8/tier_kernels.h), so the bits are the scalar kernel's. Same checks and messages (plan_add); other CPUs go to
// kernels/quantized/op_add.cc.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/int8/level.h"
#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace optimized {

void quantized_add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  constexpr uint32_t kMask = selected_dtypes::quantized_add_out_optimized & dtype_bit(ScalarType::Char);
  const TierKernels* k = tier_kernels(int8_level());
  if (!(kMask & dtype_bit(ScalarType::Char)) || k == nullptr) {
    return quantized::add_out(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point,
                              output_scale, output_zero_point, activation_min, activation_max, out);
  }
  quantized::AddPlan plan;
  if (!quantized::plan_add(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point, output_scale,
                           output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  const AddTask task{plan.self,           plan.other,          plan.out,
                     plan.zp_self,        plan.zp_other,       plan.zp_out,
                     plan.activation_min, plan.activation_max, quantized::kAddLiftBits};
  k->add(self.const_data_ptr<int8_t>(), other.const_data_ptr<int8_t>(), out.numel(), task,
         out.mutable_data_ptr<int8_t>());
}

}  // namespace optimized
}  // namespace ember
