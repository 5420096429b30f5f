// native_layer_norm for Float: per row a vector pass for the mean, one for the variance (two passes, as portable,
// so a large mean does not cancel the variance away), one for the affine output; rows split over the method's
// threads when there are enough. Other dtypes: portable.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

template <class V>
EMBER_ALWAYS_INLINE float vsum(V v) {
  float s = 0.0f;
  for (int k = 0; k < Lanes<V>::value; ++k) s += v[k];
  return s;
}

template <class V>
EMBER_ALWAYS_INLINE void layer_norm_rows(const float* x, const float* w, const float* b, float* o, float* mean_out,
                                         float* rstd_out, int64_t rows, int64_t len, float eps) {
  constexpr int L = Lanes<V>::value;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* orow = o + r * len;
    V acc = vsplat<V>(0.0f);
    int64_t i = 0;
    for (; i + L <= len; i += L) acc += vload<V>(xr + i);
    float sum = vsum(acc);
    for (; i < len; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(len);
    acc = vsplat<V>(0.0f);
    for (i = 0; i + L <= len; i += L) {
      const V d = vload<V>(xr + i) - mean;
      acc += d * d;
    }
    float var = vsum(acc);
    for (; i < len; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = 1.0f / sqrtf(var / static_cast<float>(len) + eps);
    for (i = 0; i + L <= len; i += L) {
      V y = (vload<V>(xr + i) - mean) * rstd;
      if (w) y *= vload<V>(w + i);
      if (b) y += vload<V>(b + i);
      vstore(orow + i, y);
    }
    for (; i < len; ++i) {
      float y = (xr[i] - mean) * rstd;
      if (w) y *= w[i];
      if (b) y += b[i];
      orow[i] = y;
    }
    mean_out[r] = mean;
    rstd_out[r] = rstd;
  }
}

void layer_norm_baseline(const float* x, const float* w, const float* b, float* o, float* m, float* s, int64_t rows,
                         int64_t len, float eps) {
  layer_norm_rows<f32x4>(x, w, b, o, m, s, rows, len, eps);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void layer_norm_avx2(const float* x, const float* w, const float* b, float* o, float* m, float* s,
                                       int64_t rows, int64_t len, float eps) {
  layer_norm_rows<f32x8>(x, w, b, o, m, s, rows, len, eps);
}
#endif

}  // namespace

void native_layer_norm_out(KernelContext& ctx, const Tensor& input, ArrayRef<int64_t> normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2) {
  const bool all_float = out0.scalar_type() == ScalarType::Float && out1.scalar_type() == ScalarType::Float &&
                         out2.scalar_type() == ScalarType::Float &&
                         (weight == nullptr || weight->scalar_type() == ScalarType::Float) &&
                         (bias == nullptr || bias->scalar_type() == ScalarType::Float);
  if (!computes_float(selected_dtypes::native_layer_norm_out_optimized, input) || !all_float ||
      !input.is_contiguous() || !out0.is_contiguous()) {
    return portable::native_layer_norm_out(ctx, input, normalized_shape, weight, bias, eps, out0, out1, out2);
  }
  // The same checks as portable's, with its messages.
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
                     portable::fit_output(out0, input.sizes()) &&
                         portable::fit_output(out1, stat_shape, static_cast<size_t>(n)) &&
                         portable::fit_output(out2, stat_shape, static_cast<size_t>(n)),
                     InvalidArgument, "native_layer_norm.out: outputs have the wrong shapes");
  EMBER_KERNEL_CHECK(ctx,
                     (weight == nullptr || weight->numel() == inner) && (bias == nullptr || bias->numel() == inner),
                     InvalidArgument, "native_layer_norm.out: weight and bias must have %lld elements",
                     static_cast<long long>(inner));
  if (inner == 0 || outer == 0)
    return portable::native_layer_norm_out(ctx, input, normalized_shape, weight, bias, eps, out0, out1, out2);
  const float* w = weight ? weight->const_data_ptr<float>() : nullptr;
  const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
  const float* x = input.const_data_ptr<float>();
  float* o = out0.mutable_data_ptr<float>();
  float* mean = out1.mutable_data_ptr<float>();
  float* rstd = out2.mutable_data_ptr<float>();
  const float e = static_cast<float>(eps);
  // Whole rows per thread; three plain passes a row.
  parallel_elements(ctx.threads(), outer * inner, inner, kSplitPlain / 4, [&](int64_t begin, int64_t end) {
    const int64_t r0 = begin / inner, rows = (end - begin) / inner;
#if EMBER_SIMD_X86_DISPATCH
    if (cpu_has_avx2_fma()) return layer_norm_avx2(x + begin, w, b, o + begin, mean + r0, rstd + r0, rows, inner, e);
#endif
    layer_norm_baseline(x + begin, w, b, o + begin, mean + r0, rstd + r0, rows, inner, e);
  });
}

}  // namespace optimized
}  // namespace ember
