// ember_llm::linear.out for Float. Row layout (nn.Linear's own [N, K], read in place, so a tied token embedding
// [V, D] is the output head without a transposed copy): each weight row is read once per tile of up to 4 tokens and
// multiplied lane-wise against them, the lanes summed at the row's end; at decode (one token) the weights stream in
// file order, which is what bounds that step. Blocked layout ([N / 16, K, 16]): blocked_linear.h's register tiles,
// for prefill's many tokens. With a thread pool the output features are split between the threads, each reading
// only its rows. Other CPUs and dtypes run portable's loop.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/optimized/blocked_linear.h"
#include "kernels/portable/kernels.h"

#if EMBER_SIMD_X86_DISPATCH
#include <immintrin.h>
#endif
#if defined(__aarch64__) && !defined(__APPLE__)
#include <arm_neon.h>
#define EMBER_LINEAR_NEON 1
#else
#define EMBER_LINEAR_NEON 0
#endif

namespace ember {
namespace optimized {
namespace {

constexpr int64_t kTokenTile = 4;

#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 EMBER_ALWAYS_INLINE float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Rows [n0, n1) of the weights against TT tokens, 8 inputs a step.
template <int TT>
EMBER_TARGET_AVX2 void rows_avx2(const float* x, const float* w, const float* bias, float* o, int64_t K, int64_t N,
                                 int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* wr = w + n * K;
    __m256 acc[TT];
    for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const __m256 wv = _mm256_loadu_ps(wr + k);
      for (int t = 0; t < TT; ++t) acc[t] = _mm256_fmadd_ps(_mm256_loadu_ps(x + t * K + k), wv, acc[t]);
    }
    for (int t = 0; t < TT; ++t) {
      float sum = hsum8(acc[t]);
      for (int64_t kk = k; kk < K; ++kk) sum += x[t * K + kk] * wr[kk];
      o[t * N + n] = bias ? sum + bias[n] : sum;
    }
  }
}

// The same on 512-bit vectors where the CPU has AVX-512F, the last partial step masked. (gcc 12 warns that its own
// avx512fintrin.h reads a vector it means to leave undefined; silenced for this function.)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <int TT>
EMBER_TARGET_AVX512 void rows_avx512(const float* x, const float* w, const float* bias, float* o, int64_t K, int64_t N,
                                     int64_t n0, int64_t n1) {
  const __mmask16 tail = static_cast<__mmask16>((1u << (K % 16)) - 1u);
  for (int64_t n = n0; n < n1; ++n) {
    const float* wr = w + n * K;
    __m512 acc[TT];
    for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m512 wv = _mm512_loadu_ps(wr + k);
      for (int t = 0; t < TT; ++t) acc[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * K + k), wv, acc[t]);
    }
    if (tail) {
      const __m512 wv = _mm512_maskz_loadu_ps(tail, wr + k);
      for (int t = 0; t < TT; ++t) acc[t] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + t * K + k), wv, acc[t]);
    }
    for (int t = 0; t < TT; ++t) {
      const float sum = _mm512_reduce_add_ps(acc[t]);
      o[t * N + n] = bias ? sum + bias[n] : sum;
    }
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#elif EMBER_LINEAR_NEON
template <int TT>
void rows_neon(const float* x, const float* w, const float* bias, float* o, int64_t K, int64_t N, int64_t n0,
               int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const float* wr = w + n * K;
    float32x4_t acc0[TT], acc1[TT];
    for (int t = 0; t < TT; ++t) acc0[t] = acc1[t] = vdupq_n_f32(0.0f);
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const float32x4_t w0 = vld1q_f32(wr + k), w1 = vld1q_f32(wr + k + 4);
      for (int t = 0; t < TT; ++t) {
        acc0[t] = vfmaq_f32(acc0[t], vld1q_f32(x + t * K + k), w0);
        acc1[t] = vfmaq_f32(acc1[t], vld1q_f32(x + t * K + k + 4), w1);
      }
    }
    for (int t = 0; t < TT; ++t) {
      float sum = vaddvq_f32(vaddq_f32(acc0[t], acc1[t]));
      for (int64_t kk = k; kk < K; ++kk) sum += x[t * K + kk] * wr[kk];
      o[t * N + n] = bias ? sum + bias[n] : sum;
    }
  }
}
#endif

using RowsFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);

// The tile kernels this CPU runs (full tile, one token), or false where only portable's loop runs.
bool row_kernels(RowsFn* tile, RowsFn* one) {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx512f()) return *tile = rows_avx512<kTokenTile>, *one = rows_avx512<1>, true;
  if (cpu_has_avx2_fma()) return *tile = rows_avx2<kTokenTile>, *one = rows_avx2<1>, true;
  return false;
#elif EMBER_LINEAR_NEON
  return *tile = rows_neon<kTokenTile>, *one = rows_neon<1>, true;
#else
  (void)tile, (void)one;
  return false;
#endif
}

}  // namespace

void linear_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out) {
  if (!computes_float(selected_dtypes::linear_out_optimized, x)) return portable::linear_out(ctx, x, weight, bias, out);
  portable::LlmLinearShape s;
  if (!portable::linear_checks(ctx, "ember_llm::linear.out", x, weight, bias, out, &s)) return;
  const float* xs = x.const_data_ptr<float>();
  const float* w = weight.const_data_ptr<float>();
  const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
  float* o = out.mutable_data_ptr<float>();
  if (s.blocked) {
    if (!blocked_supported()) return portable::linear_out(ctx, x, weight, bias, out);
    return blocked_run(ctx.threads(), BlockedCall<float>{xs, s.M, s.K, s.N, w, nullptr, b, o});
  }
  RowsFn tile = nullptr, one = nullptr;
  if (!row_kernels(&tile, &one)) return portable::linear_out(ctx, x, weight, bias, out);
  // A thread's share must read at least kSplitPlain bytes of weights for waking it to pay.
  const int64_t row_bytes = s.K * static_cast<int64_t>(sizeof(float));
  const int64_t min_rows = row_bytes > 0 ? (kSplitPlain + row_bytes - 1) / row_bytes : 1;
  parallel_elements(ctx.threads(), s.N, 8, min_rows, [&](int64_t n0, int64_t n1) {
    int64_t m = 0;
    for (; m + kTokenTile <= s.M; m += kTokenTile) tile(xs + m * s.K, w, b, o + m * s.N, s.K, s.N, n0, n1);
    for (; m < s.M; ++m) one(xs + m * s.K, w, b, o + m * s.N, s.K, s.N, n0, n1);
  });
}

}  // namespace optimized
}  // namespace ember
