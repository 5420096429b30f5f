// sigmoid, silu and hardswish for Float, one vector pass each (in place allowed). EfficientNet runs SiLU after
// nearly every convolution and MobileNetV3 hardswish: the portable kernels' scalar double-precision exp made
// sigmoid and SiLU a third of EfficientNet-B0's run. exp is vec_math.h's (within 2 ulp); sigmoid is
// 1 / (1 + exp(-x)), silu x / (1 + exp(-x)) and hardswish x * min(max(x + 3, 0), 6) / 6, as ATen writes them.
// Other dtypes: portable.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/vec_math.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace optimized {
namespace {

enum class Fn { Sigmoid, Silu, Hardswish };

template <class V>
EMBER_ALWAYS_INLINE V apply(Fn fn, V x) {
  if (fn == Fn::Hardswish) {
    const V zero = vsplat<V>(0.0f), six = vsplat<V>(6.0f);
    V t = x + 3.0f;
    t = t < zero ? zero : t;  // NaN passes through both selects, as in ATen
    t = t > six ? six : t;
    return x * t / 6.0f;
  }
  const V d = 1.0f + vexp(-x);
  return fn == Fn::Sigmoid ? 1.0f / d : x / d;
}

template <class V>
EMBER_ALWAYS_INLINE void loop(Fn fn, const float* x, float* o, int64_t n) {
  constexpr int L = Lanes<V>::value;
  int64_t i = 0;
  for (; i + L <= n; i += L) vstore(o + i, apply(fn, vload<V>(x + i)));
  if (i < n) {  // the tail through one zero-padded vector, so it rounds exactly like the body
    float buf[L] = {};
    memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    vstore(buf, apply(fn, vload<V>(buf)));
    memcpy(o + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

void loop_baseline(Fn fn, const float* x, float* o, int64_t n) { loop<f32x4>(fn, x, o, n); }
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void loop_avx2(Fn fn, const float* x, float* o, int64_t n) { loop<f32x8>(fn, x, o, n); }
EMBER_TARGET_AVX512 void loop_avx512(Fn fn, const float* x, float* o, int64_t n) { loop<f32x16>(fn, x, o, n); }
#endif

// Whether this kernel computes the call (Float on both sides, Float selected); otherwise portable does.
bool takes(uint32_t mask, const Tensor& self, const Tensor& out) {
  return computes_float(mask, self) && out.scalar_type() == ScalarType::Float;
}

void compute(KernelContext& ctx, const char* name, Fn fn, const Tensor& self, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()), InvalidArgument,
                     "%s: out's shape differs from self's", name);
  EMBER_KERNEL_CHECK(ctx, self.dim_order().equals(out.dim_order()), NotSupported,
                     "%s: self and out have different dim orders", name);
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  // Tiles of whole vectors, so only the last tile has the zero-padded tail: the single-threaded bits.
  parallel_elements(ctx.threads(), self.numel(), 16, fn == Fn::Hardswish ? kSplitPlain : kSplitMath,
                    [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
                      if (cpu_has_avx512f()) return loop_avx512(fn, x + begin, o + begin, end - begin);
                      if (cpu_has_avx2_fma()) return loop_avx2(fn, x + begin, o + begin, end - begin);
#endif
                      loop_baseline(fn, x + begin, o + begin, end - begin);
                    });
}

}  // namespace

void sigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!takes(selected_dtypes::sigmoid_out_optimized, self, out)) return portable::sigmoid_out(ctx, self, out);
  compute(ctx, "sigmoid.out", Fn::Sigmoid, self, out);
}

void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!takes(selected_dtypes::silu_out_optimized, self, out)) return portable::silu_out(ctx, self, out);
  compute(ctx, "silu.out", Fn::Silu, self, out);
}

void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!takes(selected_dtypes::hardswish_out_optimized, self, out)) return portable::hardswish_out(ctx, self, out);
  compute(ctx, "hardswish.out", Fn::Hardswish, self, out);
}

}  // namespace optimized
}  // namespace ember
