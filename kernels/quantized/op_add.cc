// Quantized elementwise add of two int8 tensors of the same shape, each with its own scale and zero point.
//
// The inputs cannot simply be summed: they live on different scales. Each is brought to a common scale, the
// larger input scale times 2 (so both input multipliers are <= 0.5 and fit Q31 without a left shift), after
// lifting it by 2^20 so the rescaled values keep 20 fraction bits; the sum is then requantized to the output
// scale. |q - zp| <= 255 < 2^8, so the lifted values stay below 2^28 and their sum below 2^29: no overflow.
// Every step is fixed point (util/requantize.h); the float scales only shape the three multipliers, once. The
// checks and the plan are util/geometry.h's plan_add, which kernels/helium's vector add shares.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
void add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
             double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
             int64_t activation_min, int64_t activation_max, Tensor& out) {
  AddPlan plan;
  if (!plan_add(ctx, self, self_scale, self_zero_point, other, other_scale, other_zero_point, output_scale,
                output_zero_point, activation_min, activation_max, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::add_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::add.out", kMask, self.scalar_type(), [&](auto) {
    const int8_t* a = self.const_data_ptr<int8_t>();
    const int8_t* b = other.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = add_one(a[i], b[i], plan);
  });
}

}  // namespace quantized
}  // namespace ember
