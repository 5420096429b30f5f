// Normalization: native_layer_norm (mean and rstd outputs too), native_group_norm, and batch norm for inference
// (_native_batch_norm_legit_no_training; its mean/invstd outputs are empty, as ATen's are) and training
// (_native_batch_norm_legit with and without running stats).
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
  EMBER_KERNEL_CHECK(ctx, k >= 1 && k <= n, InvalidArgument,
                     "native_layer_norm.out: normalized_shape of %lld dims "
                     "for a %lld-d input",
                     static_cast<long long>(k), static_cast<long long>(n));
  int64_t inner = 1;
  for (int64_t i = 0; i < k; ++i) {
    EMBER_KERNEL_CHECK(ctx, input.size(static_cast<int32_t>(n - k + i)) == normalized_shape[static_cast<size_t>(i)],
                       InvalidArgument,
                       "native_layer_norm.out: normalized_shape does not match the input's trailing dims");
    inner *= normalized_shape[static_cast<size_t>(i)];
  }
  const int64_t outer = inner ? input.numel() / inner : 0;
  int32_t stat_shape[kMaxTensorDim];
  for (int64_t i = 0; i < n; ++i) stat_shape[i] = i < n - k ? input.size(static_cast<int32_t>(i)) : 1;
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out0, input.sizes()) && fit_output(out1, stat_shape, static_cast<size_t>(n)) &&
                         fit_output(out2, stat_shape, static_cast<size_t>(n)),
                     InvalidArgument, "native_layer_norm.out: outputs have the wrong shapes");
  EMBER_KERNEL_CHECK(ctx,
                     (weight == nullptr || weight->numel() == inner) && (bias == nullptr || bias->numel() == inner),
                     InvalidArgument, "native_layer_norm.out: weight and bias must have %lld elements",
                     static_cast<long long>(inner));
  // Every tensor is read or written as the input's dtype.
  const ScalarType st = input.scalar_type();
  EMBER_KERNEL_CHECK(ctx,
                     out0.scalar_type() == st && out1.scalar_type() == st && out2.scalar_type() == st &&
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

namespace {

// Batch norm over dim 1 of an [N, C, ...] input. Training: statistics of the batch (biased variance), saved as
// save_mean/save_invstd ([C]), and running stats, when given, moved by momentum towards the batch's (unbiased
// variance), as ATen does. Inference: the running stats, and empty save outputs, as ATen's.
template <uint32_t Mask>
void batch_norm(KernelContext& ctx, const char* name, const Tensor& input, const Tensor* weight, const Tensor* bias,
                Tensor* running_mean, Tensor* running_var, bool training, double momentum, double eps, Tensor& out,
                Tensor& save_mean, Tensor& save_invstd) {
  EMBER_KERNEL_CHECK(ctx, input.dim() >= 2, InvalidArgument, "%s: input must have a channel dim (got %d-d)", name,
                     static_cast<int>(input.dim()));
  const int64_t C_ = input.size(1);
  EMBER_KERNEL_CHECK(ctx, (running_mean == nullptr) == (running_var == nullptr), InvalidArgument,
                     "%s: running_mean and running_var come together", name);
  EMBER_KERNEL_CHECK(ctx, training || running_mean != nullptr, InvalidArgument,
                     "%s: inference (training=False) needs running statistics", name);
  EMBER_KERNEL_CHECK(ctx,
                     (running_mean == nullptr || (running_mean->numel() == C_ && running_var->numel() == C_)) &&
                         (weight == nullptr || weight->numel() == C_) && (bias == nullptr || bias->numel() == C_),
                     InvalidArgument, "%s: weight, bias and statistics must have %lld elements", name,
                     static_cast<long long>(C_));
  const int32_t stat_shape[1] = {training ? static_cast<int32_t>(C_) : 0};
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out, input.sizes()) && fit_output(save_mean, stat_shape, 1) &&
                         fit_output(save_invstd, stat_shape, 1),
                     InvalidArgument,
                     "%s: outputs have the wrong shapes (out like input, save_mean and save_invstd "
                     "[%d])",
                     name, static_cast<int>(stat_shape[0]));
  // Every tensor is read or written as the input's dtype.
  const ScalarType st = input.scalar_type();
  EMBER_KERNEL_CHECK(ctx,
                     (running_mean == nullptr ||
                      (running_mean->scalar_type() == st && running_var->scalar_type() == st)) &&
                         (weight == nullptr || weight->scalar_type() == st) &&
                         (bias == nullptr || bias->scalar_type() == st) && out.scalar_type() == st &&
                         save_mean.scalar_type() == st && save_invstd.scalar_type() == st,
                     InvalidArgument, "%s: weight, bias, statistics and outputs must be %s like the input", name,
                     scalar_type_name(st));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous(), NotSupported, "%s: input must be contiguous", name);
  EMBER_DISPATCH(ctx, name, Mask, st, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const int64_t N = input.size(0);
    int64_t spatial = 1;
    for (int32_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
    const int64_t count = N * spatial;
    const T* x = input.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t c = 0; c < C_; ++c) {
      C mean, inv;
      if (training) {
        C sum = C(0);
        for (int64_t n = 0; n < N; ++n) {
          const T* xs = x + (n * C_ + c) * spatial;
          for (int64_t s = 0; s < spatial; ++s) sum += static_cast<C>(xs[s]);
        }
        mean = sum / static_cast<C>(count);
        C sq = C(0);
        for (int64_t n = 0; n < N; ++n) {
          const T* xs = x + (n * C_ + c) * spatial;
          for (int64_t s = 0; s < spatial; ++s) sq += (static_cast<C>(xs[s]) - mean) * (static_cast<C>(xs[s]) - mean);
        }
        const C var = sq / static_cast<C>(count);
        inv = static_cast<C>(1.0 / sqrt(static_cast<double>(var) + eps));
        save_mean.mutable_data_ptr<T>()[c] = static_cast<T>(mean);
        save_invstd.mutable_data_ptr<T>()[c] = static_cast<T>(inv);
        if (running_mean) {
          T* rm = running_mean->mutable_data_ptr<T>();
          T* rv = running_var->mutable_data_ptr<T>();
          // One value per channel: the unbiased variance is n/0, infinite or NaN, as in ATen.
          const double unbiased = static_cast<double>(sq) / static_cast<double>(count - 1);
          rm[c] = static_cast<T>(
              static_cast<C>((1.0 - momentum) * static_cast<double>(rm[c]) + momentum * static_cast<double>(mean)));
          rv[c] = static_cast<T>(static_cast<C>((1.0 - momentum) * static_cast<double>(rv[c]) + momentum * unbiased));
        }
      } else {
        mean = static_cast<C>(running_mean->const_data_ptr<T>()[c]);
        inv = static_cast<C>(1.0 / sqrt(static_cast<double>(running_var->const_data_ptr<T>()[c]) + eps));
      }
      const C g = weight ? static_cast<C>(weight->const_data_ptr<T>()[c]) : C(1);
      const C b = bias ? static_cast<C>(bias->const_data_ptr<T>()[c]) : C(0);
      for (int64_t n = 0; n < N; ++n) {
        const int64_t base = (n * C_ + c) * spatial;
        for (int64_t s = 0; s < spatial; ++s)
          o[base + s] = static_cast<T>((static_cast<C>(x[base + s]) - mean) * inv * g + b);
      }
    }
  });
}

}  // namespace

void native_batch_norm_legit_no_training_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                             const Tensor* bias, const Tensor& running_mean, const Tensor& running_var,
                                             double momentum, double eps, Tensor& out0, Tensor& out1, Tensor& out2) {
  // Inference never writes the running stats.
  batch_norm<selected_dtypes::native_batch_norm_legit_no_training_out_portable>(
      ctx, "_native_batch_norm_legit_no_training.out", input, weight, bias, const_cast<Tensor*>(&running_mean),
      const_cast<Tensor*>(&running_var), false, momentum, eps, out0, out1, out2);
}

// --- normalisation family (issue 15) ---------------------------------------------------------------------------

void native_batch_norm_legit_out(KernelContext& ctx, const Tensor& input, const Tensor* weight, const Tensor* bias,
                                 Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                                 Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  batch_norm<selected_dtypes::native_batch_norm_legit_out_portable>(ctx, "_native_batch_norm_legit.out", input, weight,
                                                                    bias, &running_mean, &running_var, training,
                                                                    momentum, eps, out, save_mean, save_invstd);
}

void native_batch_norm_legit_no_stats_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                          const Tensor* bias, bool training, double momentum, double eps, Tensor& out,
                                          Tensor& save_mean, Tensor& save_invstd) {
  // Without running stats only training is defined (ATen's eager call crashes on training=False).
  EMBER_KERNEL_CHECK(ctx, training, InvalidArgument,
                     "_native_batch_norm_legit.no_stats_out: training=False needs "
                     "running statistics (use _native_batch_norm_legit.out)");
  batch_norm<selected_dtypes::native_batch_norm_legit_no_stats_out_portable>(ctx,
                                                                             "_native_batch_norm_legit.no_stats_out",
                                                                             input, weight, bias, nullptr, nullptr,
                                                                             true, momentum, eps, out, save_mean,
                                                                             save_invstd);
}

void native_group_norm_out(KernelContext& ctx, const Tensor& input, const Tensor* weight, const Tensor* bias, int64_t N,
                           int64_t C, int64_t HxW, int64_t group, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2) {
  EMBER_KERNEL_CHECK(ctx, input.dim() >= 2, InvalidArgument,
                     "native_group_norm.out: input must be [N, C, ...] "
                     "(got %d-d)",
                     static_cast<int>(input.dim()));
  int64_t spatial = 1;
  for (int32_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
  EMBER_KERNEL_CHECK(ctx, input.size(0) == N && input.size(1) == C && spatial == HxW, InvalidArgument,
                     "native_group_norm.out: N=%lld C=%lld HxW=%lld do not match the input", static_cast<long long>(N),
                     static_cast<long long>(C), static_cast<long long>(HxW));
  EMBER_KERNEL_CHECK(ctx, group > 0 && C % group == 0, InvalidArgument,
                     "native_group_norm.out: %lld channels do not split into %lld groups", static_cast<long long>(C),
                     static_cast<long long>(group));
  EMBER_KERNEL_CHECK(ctx, (weight == nullptr || weight->numel() == C) && (bias == nullptr || bias->numel() == C),
                     InvalidArgument, "native_group_norm.out: weight and bias must have %lld elements",
                     static_cast<long long>(C));
  const int64_t stat_shape[2] = {N, group};
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out0, input.sizes()) && fit_output(out1, stat_shape, 2) &&
                         fit_output(out2, stat_shape, 2),
                     InvalidArgument,
                     "native_group_norm.out: outputs have the wrong shapes (out like input, mean "
                     "and rstd [%lld, %lld])",
                     static_cast<long long>(N), static_cast<long long>(group));
  const ScalarType st = input.scalar_type();
  EMBER_KERNEL_CHECK(ctx,
                     out0.scalar_type() == st && out1.scalar_type() == st && out2.scalar_type() == st &&
                         (weight == nullptr || weight->scalar_type() == st) &&
                         (bias == nullptr || bias->scalar_type() == st),
                     InvalidArgument, "native_group_norm.out: weight, bias and the outputs must be %s like the input",
                     scalar_type_name(st));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous(), NotSupported, "native_group_norm.out: input must be contiguous");
  EMBER_DISPATCH(ctx, "native_group_norm.out", selected_dtypes::native_group_norm_out_portable, st, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cm = compute_t<T>;
    const int64_t per_group = C / group;
    const int64_t span = per_group * HxW;
    const T* x = input.const_data_ptr<T>();
    const T* w = weight ? weight->const_data_ptr<T>() : nullptr;
    const T* b = bias ? bias->const_data_ptr<T>() : nullptr;
    T* o = out0.mutable_data_ptr<T>();
    T* mean_out = out1.mutable_data_ptr<T>();
    T* rstd_out = out2.mutable_data_ptr<T>();
    // Each (n, g) is one contiguous span of per_group channels; two passes (mean, then squared deviations).
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        const int64_t start = (n * C + g * per_group) * HxW;
        Cm sum = Cm(0);
        for (int64_t i = 0; i < span; ++i) sum += static_cast<Cm>(x[start + i]);
        const Cm mean = sum / static_cast<Cm>(span);
        Cm sq = Cm(0);
        for (int64_t i = 0; i < span; ++i) {
          const Cm d = static_cast<Cm>(x[start + i]) - mean;
          sq += d * d;
        }
        const Cm rstd = static_cast<Cm>(1.0 / sqrt(static_cast<double>(sq / static_cast<Cm>(span)) + eps));
        for (int64_t k = 0; k < per_group; ++k) {
          const int64_t c = g * per_group + k;
          const Cm scale = w ? static_cast<Cm>(w[c]) : Cm(1);
          const Cm shift = b ? static_cast<Cm>(b[c]) : Cm(0);
          for (int64_t s = 0; s < HxW; ++s) {
            const int64_t idx = start + k * HxW + s;
            o[idx] = static_cast<T>((static_cast<Cm>(x[idx]) - mean) * rstd * scale + shift);
          }
        }
        mean_out[n * group + g] = static_cast<T>(mean);
        rstd_out[n * group + g] = static_cast<T>(rstd);
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
