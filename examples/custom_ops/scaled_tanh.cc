// ember_example::scaled_tanh.out: scale * tanh(x), written like any portable kernel (shape checks first).
#include <math.h>

#include "ember/selected_dtypes.h"
#include "examples/custom_ops/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace custom_example {

void scaled_tanh_out(KernelContext& ctx, const Tensor& x, double scale, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, x.sizes()) && out.scalar_type() == x.scalar_type(), InvalidArgument,
                     "scaled_tanh.out: out must match x's shape and dtype");
  EMBER_DISPATCH(ctx, "scaled_tanh.out", selected_dtypes::scaled_tanh_out_custom_example, x.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const T* in = x.const_data_ptr<T>();
                   T* o = out.mutable_data_ptr<T>();
                   for (int64_t i = 0; i < x.numel(); ++i)
                     o[i] = static_cast<T>(scale * tanh(static_cast<double>(in[i])));
                 });
}

}  // namespace custom_example
}  // namespace ember
