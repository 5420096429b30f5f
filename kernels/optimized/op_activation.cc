// Clamping activations for Float: relu, hardtanh (ReLU6) and clamp, one vectorized pass each. In MobileNet-style
// models they follow every convolution, so a scalar loop here costs a fifth of the run. Large tensors are split over
// the method's threads. Other dtypes: portable.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

// NaN stays NaN, as in ATen: the comparisons are false for it.
EMBER_ALWAYS_INLINE void clamp_loop(const float* __restrict x, float* __restrict o, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] < lo ? lo : x[i];
    o[i] = v > hi ? hi : v;
  }
}

// In place (out aliasing self) is allowed by the schema; __restrict above is only sound for distinct buffers.
EMBER_ALWAYS_INLINE void clamp_any(const float* x, float* o, int64_t n, float lo, float hi) {
  if (x == o) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = o[i] < lo ? lo : o[i];
      o[i] = v > hi ? hi : v;
    }
    return;
  }
  clamp_loop(x, o, n, lo, hi);
}

void clamp_baseline(const float* x, float* o, int64_t n, float lo, float hi) { clamp_any(x, o, n, lo, hi); }
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void clamp_avx2(const float* x, float* o, int64_t n, float lo, float hi) {
  clamp_any(x, o, n, lo, hi);
}
#endif

void clamp_tensor(KernelContext& ctx, const char* name, const Tensor& self, Tensor& out, float lo, float hi) {
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()), InvalidArgument,
                     "%s: out's shape differs from self's", name);
  EMBER_KERNEL_CHECK(ctx, self.scalar_type() == out.scalar_type(), InvalidArgument, "%s: self is %s but out is %s",
                     name, scalar_type_name(self.scalar_type()), scalar_type_name(out.scalar_type()));
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  if (lo != lo || hi != hi) {  // as torch.clamp: a NaN bound makes every element NaN
    for (int64_t i = 0; i < self.numel(); ++i) o[i] = lo != lo ? lo : hi;
    return;
  }
  parallel_elements(ctx.threads(), self.numel(), 16, kSplitPlain, [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
    if (cpu_has_avx2_fma()) return clamp_avx2(x + begin, o + begin, end - begin, lo, hi);
#endif
    clamp_baseline(x + begin, o + begin, end - begin, lo, hi);
  });
}

}  // namespace

void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!computes_float(selected_dtypes::relu_out_optimized, self)) return portable::relu_out(ctx, self, out);
  clamp_tensor(ctx, "relu.out", self, out, 0.0f, __builtin_inff());
}

void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out) {
  if (!computes_float(selected_dtypes::hardtanh_out_optimized, self)) {
    return portable::hardtanh_out(ctx, self, min_val, max_val, out);
  }
  clamp_tensor(ctx, "hardtanh.out", self, out, min_val.to<float>(), max_val.to<float>());
}

void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out) {
  if (!computes_float(selected_dtypes::clamp_out_optimized, self)) return portable::clamp_out(ctx, self, min, max, out);
  EMBER_KERNEL_CHECK(ctx, min.has_value() || max.has_value(), InvalidArgument, "clamp.out: min and max are both None");
  clamp_tensor(ctx, "clamp.out", self, out, min.has_value() ? min.value().to<float>() : -__builtin_inff(),
               max.has_value() ? max.value().to<float>() : __builtin_inff());
}

}  // namespace optimized
}  // namespace ember
