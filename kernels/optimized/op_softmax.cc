// _softmax, _log_softmax and ember::safe_softmax for Float along the last dim (attention scores, classifier
// logits): per row one vector pass for the maximum, one for exp and its sum, one to scale; rows split over the
// method's threads when there are enough. Other dims and dtypes: portable.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/vec_math.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

template <class V>
EMBER_ALWAYS_INLINE void softmax_rows(const float* x, float* o, int64_t rows, int64_t len, bool log, bool safe) {
  constexpr int L = Lanes<V>::value;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* orow = o + r * len;
    int64_t i = 0;
    V vm = vsplat<V>(-__builtin_inff());
    for (; i + L <= len; i += L) vm = vmax(vm, vload<V>(xr + i));
    float mx = -__builtin_inff();
    for (int k = 0; k < L; ++k) mx = vm[k] > mx || vm[k] != vm[k] ? vm[k] : mx;
    for (; i < len; ++i) mx = xr[i] > mx || xr[i] != xr[i] ? xr[i] : mx;
    // A row of -inf (fully masked) has no finite maximum (a NaN anywhere would have become the maximum):
    // safe_softmax writes it as zeros; softmax subtracts 0 and keeps it NaN, as ATen does.
    if (mx == -__builtin_inff()) {
      if (safe) {
        for (int64_t k = 0; k < len; ++k) orow[k] = 0.0f;
        continue;
      }
      mx = 0.0f;
    }
    V vs = vsplat<V>(0.0f);
    i = 0;
    for (; i + L <= len; i += L) {
      const V e = vexp(vload<V>(xr + i) - mx);
      if (!log) vstore(orow + i, e);
      vs += e;
    }
    float sum = 0.0f;
    for (int k = 0; k < L; ++k) sum += vs[k];
    for (; i < len; ++i) {
      V t = vsplat<V>(xr[i] - mx);
      const float e = vexp(t)[0];
      if (!log) orow[i] = e;
      sum += e;
    }
    i = 0;
    if (log) {
      const float shift = mx + logf(sum);
      for (; i + L <= len; i += L) vstore(orow + i, vload<V>(xr + i) - shift);
      for (; i < len; ++i) orow[i] = xr[i] - shift;
    } else {
      const float inv = 1.0f / sum;
      for (; i + L <= len; i += L) vstore(orow + i, vload<V>(orow + i) * inv);
      for (; i < len; ++i) orow[i] *= inv;
    }
  }
}

void softmax_baseline(const float* x, float* o, int64_t rows, int64_t len, bool log, bool safe) {
  softmax_rows<f32x4>(x, o, rows, len, log, safe);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void softmax_avx2(const float* x, float* o, int64_t rows, int64_t len, bool log, bool safe) {
  softmax_rows<f32x8>(x, o, rows, len, log, safe);
}
#endif

// Whether this kernel takes the call: Float, contiguous, the last dim, out shaped like self, not aliasing it (the
// exp is stored before the row's sum is known).
bool takes(uint32_t mask, const Tensor& self, int64_t dim, bool half_to_float, const Tensor& out) {
  const int64_t n = self.dim();
  return computes_float(mask, self) && !half_to_float && n > 0 && (dim == n - 1 || dim == -1) && self.is_contiguous() &&
         out.is_contiguous() && out.scalar_type() == ScalarType::Float && self.const_data_ptr() != out.const_data_ptr();
}

void softmax_last(KernelContext& ctx, const char* name, const Tensor& self, bool log, Tensor& out, bool safe = false) {
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()), InvalidArgument, "%s: out must match self's shape",
                     name);
  const int64_t len = self.size(self.dim() - 1);
  if (len == 0) return;
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  // Whole rows per thread (three passes with an exp each: the element cost of kSplitMath).
  parallel_elements(ctx.threads(), self.numel(), len, kSplitMath, [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
    if (cpu_has_avx2_fma()) return softmax_avx2(x + begin, o + begin, (end - begin) / len, len, log, safe);
#endif
    softmax_baseline(x + begin, o + begin, (end - begin) / len, len, log, safe);
  });
}

}  // namespace

void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  if (!takes(selected_dtypes::softmax_out_optimized, self, dim, half_to_float, out)) {
    return portable::softmax_out(ctx, self, dim, half_to_float, out);
  }
  softmax_last(ctx, "_softmax.out", self, false, out);
}

void log_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  if (!takes(selected_dtypes::log_softmax_out_optimized, self, dim, half_to_float, out)) {
    return portable::log_softmax_out(ctx, self, dim, half_to_float, out);
  }
  softmax_last(ctx, "_log_softmax.out", self, true, out);
}

void safe_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  if (!takes(selected_dtypes::safe_softmax_out_optimized, self, dim, false, out)) {
    return portable::safe_softmax_out(ctx, self, dim, out);
  }
  softmax_last(ctx, "ember::safe_softmax.out", self, false, out, true);
}

}  // namespace optimized
}  // namespace ember
