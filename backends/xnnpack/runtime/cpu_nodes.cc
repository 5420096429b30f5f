#include "backends/xnnpack/runtime/cpu_nodes.h"

#include <string.h>

#include "compute/gemm.h"
#include "compute/simd.h"
#include "compute/vec_math.h"

namespace ember {
namespace xnnpack {
namespace {

using optimized::Lanes;

template <class V>
EMBER_ALWAYS_INLINE void gelu_loop(const float* x, float* y, uint64_t n) {
  constexpr uint64_t L = Lanes<V>::value;
  uint64_t i = 0;
  for (; i + L <= n; i += L) optimized::vstore(y + i, optimized::vgelu(optimized::vload<V>(x + i), false));
  if (i < n) {  // the tail through one zero-padded vector, rounding as the body does
    float buf[L] = {};
    memcpy(buf, x + i, (n - i) * sizeof(float));
    optimized::vstore(buf, optimized::vgelu(optimized::vload<V>(buf), false));
    memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

void gelu_baseline(const float* x, float* y, uint64_t n) { gelu_loop<optimized::f32x4>(x, y, n); }
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void gelu_avx2(const float* x, float* y, uint64_t n) { gelu_loop<optimized::f32x8>(x, y, n); }
#endif

}  // namespace

void gelu(const float* x, float* y, uint64_t n) {
#if EMBER_SIMD_X86_DISPATCH
  if (optimized::cpu_has_avx2_fma()) return gelu_avx2(x, y, n);
#endif
  gelu_baseline(x, y, n);
}

void batch_matmul(const float* a, const float* bm, float* c, uint64_t batch, uint32_t m, uint32_t k, uint32_t n) {
  const uint64_t mk = static_cast<uint64_t>(m) * k, kn = static_cast<uint64_t>(k) * n;
  const uint64_t mn = static_cast<uint64_t>(m) * n;
  if (k == 0) {  // empty sums: zeros, which the GEMM's loops over K would never write
    memset(c, 0, batch * mn * sizeof(float));
    return;
  }
  for (uint64_t b = 0; b < batch; ++b) {
    optimized::Gemm g;
    g.M = m, g.N = n, g.K = k;
    g.a = a + b * mk, g.lda = k;
    g.b = bm + b * kn, g.ldb = n;
    g.c = c + b * mn, g.ldc = n;
    optimized::sgemm(g);
  }
}

void concatenate(const void* const* inputs, const uint64_t* row_bytes, uint32_t count, uint64_t outer, void* output) {
  uint8_t* out = static_cast<uint8_t*>(output);
  for (uint64_t r = 0; r < outer; ++r) {
    for (uint32_t i = 0; i < count; ++i) {
      memcpy(out, static_cast<const uint8_t*>(inputs[i]) + r * row_bytes[i], row_bytes[i]);
      out += row_bytes[i];
    }
  }
}

}  // namespace xnnpack
}  // namespace ember
