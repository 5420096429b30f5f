// Normalization: native_layer_norm (mean and rstd outputs too) and inference batch norm
// (_native_batch_norm_legit_no_training; its mean/invstd outputs are empty, as ATen's are for inference).
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

void native_layer_norm_out(KernelContext& ctx, const Tensor& input, ArrayRef<int64_t> normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2) {
  const int64_t n = input.dim(), k = static_cast<int64_t>(normalized_shape.size());
  EMBER_KERNEL_CHECK(ctx, k >= 1 && k <= n, InvalidArgument, "native_layer_norm.out: normalized_shape of %lld dims "
                     "for a %lld-d input", static_cast<long long>(k), static_cast<long long>(n));
  int64_t inner = 1;
  for (int64_t i = 0; i < k; ++i) {
    EMBER_KERNEL_CHECK(ctx, input.size(static_cast<int32_t>(n - k + i)) == normalized_shape[static_cast<size_t>(i)],
                       InvalidArgument, "native_layer_norm.out: normalized_shape does not match the input's trailing dims");
    inner *= normalized_shape[static_cast<size_t>(i)];
  }
  const int64_t outer = inner ? input.numel() / inner : 0;
  int32_t stat_shape[kMaxTensorDim];
  for (int64_t i = 0; i < n; ++i) stat_shape[i] = i < n - k ? input.size(static_cast<int32_t>(i)) : 1;
  EMBER_KERNEL_CHECK(ctx, fit_output(out0, input.sizes()) && fit_output(out1, stat_shape, static_cast<size_t>(n)) &&
                              fit_output(out2, stat_shape, static_cast<size_t>(n)),
                     InvalidArgument, "native_layer_norm.out: outputs have the wrong shapes");
  EMBER_KERNEL_CHECK(ctx, (weight == nullptr || weight->numel() == inner) && (bias == nullptr || bias->numel() == inner),
                     InvalidArgument, "native_layer_norm.out: weight and bias must have %lld elements",
                     static_cast<long long>(inner));
  // Every tensor is read or written as the input's dtype.
  const ScalarType st = input.scalar_type();
  EMBER_KERNEL_CHECK(ctx, out0.scalar_type() == st && out1.scalar_type() == st && out2.scalar_type() == st &&
                              (weight == nullptr || weight->scalar_type() == st) &&
                              (bias == nullptr || bias->scalar_type() == st),
                     InvalidArgument, "native_layer_norm.out: weight, bias and the outputs must be %s like the input",
                     scalar_type_name(st));
  EMBER_DISPATCH(ctx, "native_layer_norm.out", selected_dtypes::native_layer_norm_out_portable, input.scalar_type(),
                 [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = input.const_data_ptr<T>();
    const T* w = weight ? weight->const_data_ptr<T>() : nullptr;
    const T* b = bias ? bias->const_data_ptr<T>() : nullptr;
    T* o = out0.mutable_data_ptr<T>();
    T* mean_out = out1.mutable_data_ptr<T>();
    T* rstd_out = out2.mutable_data_ptr<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* xr = x + r * inner;
      C sum = C(0);
      for (int64_t i = 0; i < inner; ++i) sum += static_cast<C>(xr[i]);
      const C mean = sum / static_cast<C>(inner);
      C var = C(0);
      for (int64_t i = 0; i < inner; ++i) {
        const C dlt = static_cast<C>(xr[i]) - mean;
        var += dlt * dlt;
      }
      var /= static_cast<C>(inner);
      const C rstd = static_cast<C>(1.0 / sqrt(static_cast<double>(var) + eps));
      for (int64_t i = 0; i < inner; ++i) {
        C v = (static_cast<C>(xr[i]) - mean) * rstd;
        if (w) v *= static_cast<C>(w[i]);
        if (b) v += static_cast<C>(b[i]);
        o[r * inner + i] = static_cast<T>(v);
      }
      mean_out[r] = static_cast<T>(mean);
      rstd_out[r] = static_cast<T>(rstd);
    }
  });
}

void native_batch_norm_legit_no_training_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                             const Tensor* bias, const Tensor& running_mean,
                                             const Tensor& running_var, double momentum, double eps, Tensor& out0,
                                             Tensor& out1, Tensor& out2) {
  (void)momentum;
  EMBER_KERNEL_CHECK(ctx, input.dim() >= 2, InvalidArgument, "_native_batch_norm_legit_no_training.out: input must "
                     "have a channel dim");
  const int64_t C_ = input.size(1);
  EMBER_KERNEL_CHECK(ctx, running_mean.numel() == C_ && running_var.numel() == C_ &&
                              (weight == nullptr || weight->numel() == C_) && (bias == nullptr || bias->numel() == C_),
                     InvalidArgument, "_native_batch_norm_legit_no_training.out: statistics must have %lld elements",
                     static_cast<long long>(C_));
  // Every tensor is read or written as the input's dtype.
  const ScalarType st = input.scalar_type();
  EMBER_KERNEL_CHECK(ctx, running_mean.scalar_type() == st && running_var.scalar_type() == st &&
                              (weight == nullptr || weight->scalar_type() == st) &&
                              (bias == nullptr || bias->scalar_type() == st) && out0.scalar_type() == st,
                     InvalidArgument, "_native_batch_norm_legit_no_training.out: weight, bias, statistics and out "
                     "must be %s like the input", scalar_type_name(st));
  const int32_t empty[1] = {0};
  EMBER_KERNEL_CHECK(ctx, fit_output(out0, input.sizes()) && fit_output(out1, empty, 1) && fit_output(out2, empty, 1),
                     InvalidArgument, "_native_batch_norm_legit_no_training.out: outputs have the wrong shapes");
  EMBER_DISPATCH(ctx, "_native_batch_norm_legit_no_training.out",
                 selected_dtypes::native_batch_norm_legit_no_training_out_portable, input.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const int64_t N = input.size(0);
    int64_t spatial = 1;
    for (int32_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
    const T* x = input.const_data_ptr<T>();
    T* o = out0.mutable_data_ptr<T>();
    for (int64_t c = 0; c < C_; ++c) {
      const C mean = static_cast<C>(running_mean.const_data_ptr<T>()[c]);
      const C inv = static_cast<C>(1.0 / sqrt(static_cast<double>(running_var.const_data_ptr<T>()[c]) + eps));
      const C g = weight ? static_cast<C>(weight->const_data_ptr<T>()[c]) : C(1);
      const C b = bias ? static_cast<C>(bias->const_data_ptr<T>()[c]) : C(0);
      for (int64_t n = 0; n < N; ++n) {
        const int64_t base = (n * C_ + c) * spatial;
        for (int64_t s = 0; s < spatial; ++s) o[base + s] = static_cast<T>((static_cast<C>(x[base + s]) - mean) * inv * g + b);
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
