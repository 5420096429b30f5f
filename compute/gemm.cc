// The SGEMM's entry points: the baseline tiles of each architecture, and the run-time choice of AVX-512F or AVX2+FMA
// on x86-64.
#include "compute/gemm.h"

#include "compute/gemm_kernel.h"

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

void sgemm_packed_baseline(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool) {
#if defined(__aarch64__)
  sgemm_packed_any<f32x4, 6, 4>(g, b, scratch, pool);
#elif defined(__x86_64__)
  sgemm_packed_any<f32x4, 6, 2>(g, b, scratch, pool);
#else
  sgemm_packed_any<f32x4, 2, 2>(g, b, scratch, pool);
#endif
}

void sgemm_packed(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool) {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx512f()) return sgemm_packed_avx512(g, b, scratch, pool);
  if (cpu_has_avx2_fma()) return sgemm_packed_avx2(g, b, scratch, pool);
#endif
  sgemm_packed_baseline(g, b, scratch, pool);
}

void sgemm(const Gemm& g) {
#if EMBER_SIMD_X86_DISPATCH
  if (g.K > 0 && cpu_has_avx512f()) return sgemm_avx512(g);
  if (g.K > 0 && cpu_has_avx2_fma()) return sgemm_avx2(g);
#endif
  sgemm_baseline(g);
}

}  // namespace optimized
}  // namespace ember

namespace ember {
namespace optimized {

namespace {
// Below this many multiply-adds a product runs on the caller: a split costs about a microsecond, a product this
// small about as much.
constexpr int64_t kParallelMinMacs = 1 << 17;
// Column slices are whole tiles on every instruction set (48 = 2 x 24 = 3 x 16 = 6 x 8); row slices are at least
// this many rows, so no slice falls to sgemm_few_rows (whose sums run in another order) when the whole would not.
constexpr int64_t kColumnQuantum = 48;
constexpr int64_t kRowQuantum = 24;
}  // namespace

void sgemm(const Gemm& g, ThreadPool* pool) {
  const int threads = pool != nullptr ? pool->threads() : 1;
  if (threads <= 1 || g.K <= 0 || g.M * g.N * g.K < kParallelMinMacs) return sgemm(g);
  // Two slices per thread, so a thread that started late still gets its share.
  const int64_t parts = g.M <= 4 ? threads : 2 * threads;
  if (g.N >= parts * kColumnQuantum / 2) {
    const int64_t step = ((g.N + parts - 1) / parts + kColumnQuantum - 1) / kColumnQuantum * kColumnQuantum;
    parallel_for(pool, g.N, step, [&](int64_t b, int64_t e) {
      Gemm s = g;
      s.N = e - b, s.b = g.b + b, s.c = g.c + b;
      if (g.col_bias) s.col_bias = g.col_bias + b;
      sgemm(s);
    });
    return;
  }
  if (g.M >= 2 * kRowQuantum) {
    // Slices of equal size (none shorter than kRowQuantum), not equal steps, which could leave a last slice of
    // a few rows.
    const int64_t slices = g.M / kRowQuantum < parts ? g.M / kRowQuantum : parts;
    parallel_for(pool, slices, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t r0 = i * g.M / slices, r1 = (i + 1) * g.M / slices;
        Gemm s = g;
        s.M = r1 - r0, s.a = g.a + r0 * g.lda, s.c = g.c + r0 * g.ldc;
        if (g.row_bias) s.row_bias = g.row_bias + r0;
        sgemm(s);
      }
    });
    return;
  }
  sgemm(g);
}

}  // namespace optimized
}  // namespace ember
