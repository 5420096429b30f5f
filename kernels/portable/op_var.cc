// Variance over dims: var.correction_out, var.out (unbiased = correction 1), var_mean.correction_out. Two passes
// per output element (mean, then squared deviations) in compute_t: float for Half/BFloat16/Float, double for Double.
// The divisor is max(0, N - correction), as ATen's: NaN or infinity when N <= correction.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {
namespace {

template <uint32_t Mask>
void variance(KernelContext& ctx, const char* name, const Tensor& self, Optional<ArrayRef<int64_t>> dim,
              double correction, bool keepdim, Tensor& var, Tensor* mean) {
  ReducePlan plan;
  EMBER_KERNEL_CHECK(ctx, make_reduce_plan(self, dim, keepdim, plan), InvalidArgument,
                     "%s: dims out of range or repeated for a %d-d input", name, static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(var, plan.out_shape, plan.out_rank) &&
                         (mean == nullptr || fit_output(*mean, plan.out_shape, plan.out_rank)),
                     InvalidArgument, "%s: outputs have the wrong shape for a reduction of a %d-d input", name,
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx,
                     var.scalar_type() == self.scalar_type() &&
                         (mean == nullptr || mean->scalar_type() == self.scalar_type()),
                     InvalidArgument, "%s: outputs must be %s like self", name, scalar_type_name(self.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, correction == correction, InvalidArgument, "%s: correction is NaN", name);
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous(), NotSupported, "%s: self must be contiguous", name);
  EMBER_DISPATCH(ctx, name, Mask, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = self.const_data_ptr<T>();
    T* v = var.mutable_data_ptr<T>();
    T* m = mean ? mean->mutable_data_ptr<T>() : nullptr;
    const double n = static_cast<double>(plan.reduced_numel);
    const double dof = n - correction > 0 ? n - correction : 0.0;
    for (int64_t i = 0; i < plan.out_numel; ++i) {
      C sum = C(0);
      plan.walk(i, [&](int64_t, int64_t off) { sum += static_cast<C>(x[off]); });
      const C mu = sum / static_cast<C>(n);
      C sq = C(0);
      plan.walk(i, [&](int64_t, int64_t off) {
        const C d = static_cast<C>(x[off]) - mu;
        sq += d * d;
      });
      v[i] = static_cast<T>(static_cast<C>(static_cast<double>(sq) / dof));
      if (m) m[i] = static_cast<T>(mu);
    }
  });
}

double correction_of(Optional<Scalar> correction) {
  return correction.has_value() ? correction.value().to_double() : 1.0;
}

}  // namespace

void var_correction_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim,
                        Optional<Scalar> correction, bool keepdim, Tensor& out) {
  variance<selected_dtypes::var_correction_out_portable>(ctx, "var.correction_out", self, dim,
                                                         correction_of(correction), keepdim, out, nullptr);
}

void var_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool unbiased, bool keepdim,
             Tensor& out) {
  variance<selected_dtypes::var_out_portable>(ctx, "var.out", self, dim, unbiased ? 1.0 : 0.0, keepdim, out, nullptr);
}

void var_mean_correction_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim,
                             Optional<Scalar> correction, bool keepdim, Tensor& out0, Tensor& out1) {
  variance<selected_dtypes::var_mean_correction_out_portable>(ctx, "var_mean.correction_out", self, dim,
                                                              correction_of(correction), keepdim, out0, &out1);
}

}  // namespace portable
}  // namespace ember
