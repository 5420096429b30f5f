// gelu for Float, both approximations ("none": erf; "tanh"), one vector pass (in place allowed). Transformer MLPs
// run it over their widest activations. Other dtypes and an unknown approximation: portable (which refuses it).
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

template <class V>
EMBER_ALWAYS_INLINE void gelu_loop(const float* x, float* o, int64_t n, bool tanh_approx) {
  constexpr int L = Lanes<V>::value;
  int64_t i = 0;
  for (; i + L <= n; i += L) vstore(o + i, vgelu(vload<V>(x + i), tanh_approx));
  if (i < n) {  // the tail through one zero-padded vector, so it rounds exactly like the body
    float buf[L] = {};
    memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    vstore(buf, vgelu(vload<V>(buf), tanh_approx));
    memcpy(o + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

void gelu_baseline(const float* x, float* o, int64_t n, bool t) { gelu_loop<f32x4>(x, o, n, t); }
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void gelu_avx2(const float* x, float* o, int64_t n, bool t) { gelu_loop<f32x8>(x, o, n, t); }
#endif

}  // namespace

void gelu_out(KernelContext& ctx, const Tensor& self, StringView approximate, Tensor& out) {
  const bool none = approximate.size == 4 && memcmp(approximate.data, "none", 4) == 0;
  const bool tanh_approx = approximate.size == 4 && memcmp(approximate.data, "tanh", 4) == 0;
  if (!computes_float(selected_dtypes::gelu_out_optimized, self) || !(none || tanh_approx) ||
      out.scalar_type() != ScalarType::Float) {
    return portable::gelu_out(ctx, self, approximate, out);
  }
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, self.sizes()), InvalidArgument,
                     "gelu.out: out's shape differs from self's");
  EMBER_KERNEL_CHECK(ctx, self.dim_order().equals(out.dim_order()), NotSupported,
                     "gelu.out: self and out have different dim orders");
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  // Tiles of whole vectors, so only the last tile has the zero-padded tail: the single-threaded bits.
  parallel_elements(ctx.threads(), self.numel(), 16, kSplitMath, [&](int64_t begin, int64_t end) {
#if EMBER_SIMD_X86_DISPATCH
    if (cpu_has_avx2_fma()) return gelu_avx2(x + begin, o + begin, end - begin, tanh_approx);
#endif
    gelu_baseline(x + begin, o + begin, end - begin, tanh_approx);
  });
}

}  // namespace optimized
}  // namespace ember
