// The SGEMM's entry points: the baseline tiles of each architecture, and the run-time choice of AVX2+FMA on x86-64.
#include "kernels/optimized/util/gemm.h"

#include "kernels/optimized/util/gemm_kernel.h"

namespace ember {
namespace optimized {

// Tile shapes: registers hold MR x NV accumulators + NV of B + 1 of A.
#if defined(__aarch64__)
// 32 NEON registers: 6 x 16 floats (24 + 4 + 1).
void sgemm_baseline(const Gemm& g) { g.K > 0 ? sgemm_any<f32x4, 6, 4>(g) : bias_only(g); }
#elif defined(__x86_64__)
// 16 SSE registers: 6 x 8 floats (12 + 2 + 1).
void sgemm_baseline(const Gemm& g) { g.K > 0 ? sgemm_any<f32x4, 6, 2>(g) : bias_only(g); }
#else
// Cortex-M's 8 MVE registers (and anything else small): 2 x 8 floats (4 + 2 + 1).
void sgemm_baseline(const Gemm& g) { g.K > 0 ? sgemm_any<f32x4, 2, 2>(g) : bias_only(g); }
#endif

#if defined(__aarch64__)
void sgemm_packed_baseline(const Gemm& g, const PackedB& b, float* scratch) { sgemm_packed_any<f32x4, 6, 4>(g, b, scratch); }
#elif defined(__x86_64__)
void sgemm_packed_baseline(const Gemm& g, const PackedB& b, float* scratch) { sgemm_packed_any<f32x4, 6, 2>(g, b, scratch); }
#else
void sgemm_packed_baseline(const Gemm& g, const PackedB& b, float* scratch) { sgemm_packed_any<f32x4, 2, 2>(g, b, scratch); }
#endif

void sgemm_packed(const Gemm& g, const PackedB& b, float* scratch) {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx2_fma()) return sgemm_packed_avx2(g, b, scratch);
#endif
  sgemm_packed_baseline(g, b, scratch);
}

void sgemm(const Gemm& g) {
#if EMBER_SIMD_X86_DISPATCH
  if (g.K > 0 && cpu_has_avx2_fma()) return sgemm_avx2(g);
#endif
  sgemm_baseline(g);
}

}  // namespace optimized
}  // namespace ember
