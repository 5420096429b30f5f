// Quantized elementwise multiply of two int8 tensors that broadcast, each with its own scale and zero point.
//
// Unlike the add, the inputs need no common scale: the product of the centered inputs (a - zp_a) * (b - zp_b) is
// exact in int32 and lives on scale_a * scale_b, so a single requantization by scale_a * scale_b / scale_out
// (fixed point, util/requantize.h) gives the output, with one rounding. The checks, the plan and the walk over
// broadcast runs are util/geometry.h's plan_mul, which kernels/helium's vector mul shares.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {

void mul_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
             double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
             int64_t activation_min, int64_t activation_max, Tensor& out) {
  MulPlan plan;
  if (!plan_mul(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point, output_scale,
                output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::mul_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::mul.out", kMask, self.scalar_type(), [&](auto) {
    const int8_t* a = self.const_data_ptr<int8_t>();
    const int8_t* b = other.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    // An input broadcast along the runs repeats its element: a step of 0.
    const int64_t da = plan.runs.self_steps ? 1 : 0, db = plan.runs.other_steps ? 1 : 0;
    for_each_run(plan.runs, [&](int64_t a_at, int64_t b_at, int64_t o_at) {
      for (int64_t i = 0; i < plan.runs.inner; ++i) o[o_at + i] = mul_one(a[a_at + i * da], b[b_at + i * db], plan);
    });
  });
}

}  // namespace quantized
}  // namespace ember
