// The blocked layout's linears (ember_llm::linear and linear_int8 with weight [N / 16, K, 16]; llm_ops.py's
// pack_blocked): a register tile of tokens x output blocks, each step one weight vector per block (16 channels of
// one input, float or int8 widened in registers) and one broadcast input per token, so every load feeds several
// multiply-adds and no lanes are summed across. Blocks are the outer loop: a pair of blocks' weights stays in L2
// while every token tile passes over it, so prefill reads the weights once, in file order, as decode does.
// Included by op_llm_linear.cc (int8) and op_llm_linear_f32.cc (float); each gets its own copy (unnamed namespace).
#pragma once

#include <stdint.h>

#include <type_traits>

#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "runtime/core/thread_pool.h"

#if EMBER_SIMD_X86_DISPATCH
#include <immintrin.h>
#endif
#if defined(__aarch64__) && !defined(__APPLE__)
#include <arm_neon.h>
#define EMBER_BLOCKED_NEON 1
#else
#define EMBER_BLOCKED_NEON 0
#endif

namespace ember {
namespace optimized {
namespace {

constexpr int64_t kBlock = portable::kChannelBlock;  // output channels per block

// What one call computes: out[t, n] = (sum_k x[t, k] * w[n, k]) * scales[n] + bias[n] for tokens [0, M) and blocks
// [b0, b1); scales null for float weights, bias optional.
template <class W>
struct BlockedCall {
  const float* x;
  int64_t M, K, N;
  const W* w;
  const float* scales;
  const float* bias;
  float* o;
};

#if EMBER_SIMD_X86_DISPATCH
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // gcc 12's avx512fintrin.h, as in op_llm_linear.cc
#endif
EMBER_TARGET_AVX512 EMBER_ALWAYS_INLINE __m512 weights16(const float* w) { return _mm512_loadu_ps(w); }
EMBER_TARGET_AVX512 EMBER_ALWAYS_INLINE __m512 weights16(const int8_t* w) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))));
}

template <class W, int MT, int NB>
EMBER_TARGET_AVX512 void tile_512(const BlockedCall<W>& c, int64_t m, int64_t b) {
  __m512 acc[MT][NB];
  EMBER_UNROLL
  for (int t = 0; t < MT; ++t) EMBER_UNROLL
  for (int j = 0; j < NB; ++j) acc[t][j] = _mm512_setzero_ps();
  const W* wb = c.w + b * c.K * kBlock;
  const float* x = c.x + m * c.K;
  for (int64_t k = 0; k < c.K; ++k) {
    __m512 wv[NB];
    EMBER_UNROLL
    for (int j = 0; j < NB; ++j) wv[j] = weights16(wb + j * c.K * kBlock + k * kBlock);
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      const __m512 xv = _mm512_set1_ps(x[t * c.K + k]);
      EMBER_UNROLL
      for (int j = 0; j < NB; ++j) acc[t][j] = _mm512_fmadd_ps(xv, wv[j], acc[t][j]);
    }
  }
  EMBER_UNROLL
  for (int j = 0; j < NB; ++j) {
    const int64_t n = (b + j) * kBlock;
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      __m512 v = acc[t][j];
      if (c.scales) v = _mm512_mul_ps(v, _mm512_loadu_ps(c.scales + n));
      if (c.bias) v = _mm512_add_ps(v, _mm512_loadu_ps(c.bias + n));
      _mm512_storeu_ps(c.o + (m + t) * c.N + n, v);
    }
  }
}

// Blocks [b0, b1) in steps of NB (then one), each against every token tile: 8, 4, then 1 at a time.
template <class W, int NB>
EMBER_TARGET_AVX512 void blocks_512(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
  auto column = [&](auto nb, int64_t b) {
    constexpr int J = decltype(nb)::value;
    int64_t m = 0;
    for (; m + 8 <= c.M; m += 8) tile_512<W, 8, J>(c, m, b);
    for (; m + 4 <= c.M; m += 4) tile_512<W, 4, J>(c, m, b);
    for (; m < c.M; ++m) tile_512<W, 1, J>(c, m, b);
  };
  int64_t b = b0;
  for (; b + NB <= b1; b += NB) column(std::integral_constant<int, NB>(), b);
  for (; b < b1; ++b) column(std::integral_constant<int, 1>(), b);
}

// One token (decode): one block at a time, its K rows read as one stream, four inputs a step into four chains of
// multiply-adds (added at the end), so the weights are read in file order with one stream in flight per thread.
template <class W>
EMBER_TARGET_AVX512 void decode_512(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    const W* wb = c.w + b * c.K * kBlock;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t k = 0;
    for (; k + 4 <= c.K; k += 4) {
      EMBER_UNROLL
      for (int j = 0; j < 4; ++j) {
        acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(c.x[k + j]), weights16(wb + (k + j) * kBlock), acc[j]);
      }
    }
    for (; k < c.K; ++k) acc[0] = _mm512_fmadd_ps(_mm512_set1_ps(c.x[k]), weights16(wb + k * kBlock), acc[0]);
    __m512 v = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    if (c.scales) v = _mm512_mul_ps(v, _mm512_loadu_ps(c.scales + b * kBlock));
    if (c.bias) v = _mm512_add_ps(v, _mm512_loadu_ps(c.bias + b * kBlock));
    _mm512_storeu_ps(c.o + b * kBlock, v);
  }
}

template <class W>
EMBER_TARGET_AVX512 void blocked_512(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
  if (c.M == 1) return decode_512<W>(c, b0, b1);
  blocks_512<W, 2>(c, b0, b1);  // two blocks by up to 8 tokens: 16 sums in registers
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// AVX2: a block is two 8-float vectors.
EMBER_TARGET_AVX2 EMBER_ALWAYS_INLINE __m256 weights8(const float* w) { return _mm256_loadu_ps(w); }
EMBER_TARGET_AVX2 EMBER_ALWAYS_INLINE __m256 weights8(const int8_t* w) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w))));
}

template <class W, int MT, int NB>
EMBER_TARGET_AVX2 void tile_256(const BlockedCall<W>& c, int64_t m, int64_t b) {
  constexpr int NV = 2 * NB;
  __m256 acc[MT][NV];
  EMBER_UNROLL
  for (int t = 0; t < MT; ++t) EMBER_UNROLL
  for (int j = 0; j < NV; ++j) acc[t][j] = _mm256_setzero_ps();
  const W* wb = c.w + b * c.K * kBlock;
  const float* x = c.x + m * c.K;
  for (int64_t k = 0; k < c.K; ++k) {
    __m256 wv[NV];
    EMBER_UNROLL
    for (int j = 0; j < NV; ++j) wv[j] = weights8(wb + (j / 2) * c.K * kBlock + k * kBlock + (j % 2) * 8);
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      const __m256 xv = _mm256_broadcast_ss(x + t * c.K + k);
      EMBER_UNROLL
      for (int j = 0; j < NV; ++j) acc[t][j] = _mm256_fmadd_ps(xv, wv[j], acc[t][j]);
    }
  }
  EMBER_UNROLL
  for (int j = 0; j < NV; ++j) {
    const int64_t n = b * kBlock + j * 8;
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      __m256 v = acc[t][j];
      if (c.scales) v = _mm256_mul_ps(v, _mm256_loadu_ps(c.scales + n));
      if (c.bias) v = _mm256_add_ps(v, _mm256_loadu_ps(c.bias + n));
      _mm256_storeu_ps(c.o + (m + t) * c.N + n, v);
    }
  }
}

template <class W>
EMBER_TARGET_AVX2 void blocked_256(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    if (c.M == 1) {
      tile_256<W, 1, 1>(c, 0, b);
      continue;
    }
    int64_t m = 0;
    for (; m + 4 <= c.M; m += 4) tile_256<W, 4, 1>(c, m, b);
    for (; m < c.M; ++m) tile_256<W, 1, 1>(c, m, b);
  }
}
#endif  // EMBER_SIMD_X86_DISPATCH

#if EMBER_BLOCKED_NEON
// NEON: a block is four 4-float vectors.
EMBER_ALWAYS_INLINE void weights_neon(const float* w, float32x4_t* v) {
  EMBER_UNROLL
  for (int j = 0; j < 4; ++j) v[j] = vld1q_f32(w + 4 * j);
}
EMBER_ALWAYS_INLINE void weights_neon(const int8_t* w, float32x4_t* v) {
  const int8x16_t b = vld1q_s8(w);
  const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
  v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  v[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  v[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

template <class W, int MT>
void tile_neon(const BlockedCall<W>& c, int64_t m, int64_t b) {
  float32x4_t acc[MT][4];
  EMBER_UNROLL
  for (int t = 0; t < MT; ++t) EMBER_UNROLL
  for (int j = 0; j < 4; ++j) acc[t][j] = vdupq_n_f32(0.0f);
  const W* wb = c.w + b * c.K * kBlock;
  const float* x = c.x + m * c.K;
  for (int64_t k = 0; k < c.K; ++k) {
    float32x4_t wv[4];
    weights_neon(wb + k * kBlock, wv);
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      const float xv = x[t * c.K + k];
      EMBER_UNROLL
      for (int j = 0; j < 4; ++j) acc[t][j] = vfmaq_n_f32(acc[t][j], wv[j], xv);
    }
  }
  EMBER_UNROLL
  for (int j = 0; j < 4; ++j) {
    const int64_t n = b * kBlock + j * 4;
    EMBER_UNROLL
    for (int t = 0; t < MT; ++t) {
      float32x4_t v = acc[t][j];
      if (c.scales) v = vmulq_f32(v, vld1q_f32(c.scales + n));
      if (c.bias) v = vaddq_f32(v, vld1q_f32(c.bias + n));
      vst1q_f32(c.o + (m + t) * c.N + n, v);
    }
  }
}

template <class W>
void blocked_neon(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    int64_t m = 0;
    for (; m + 4 <= c.M; m += 4) tile_neon<W, 4>(c, m, b);
    for (; m < c.M; ++m) tile_neon<W, 1>(c, m, b);
  }
}
#endif  // EMBER_BLOCKED_NEON

// Whether this CPU runs the kernels above; then the call over blocks [b0, b1).
inline bool blocked_supported() {
#if EMBER_SIMD_X86_DISPATCH
  return cpu_has_avx2_fma();
#else
  return EMBER_BLOCKED_NEON;
#endif
}

template <class W>
void blocked_blocks(const BlockedCall<W>& c, int64_t b0, int64_t b1) {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx512f()) return blocked_512(c, b0, b1);
  blocked_256(c, b0, b1);
#elif EMBER_BLOCKED_NEON
  blocked_neon(c, b0, b1);
#else
  (void)c, (void)b0, (void)b1;
#endif
}

// The whole call, its blocks split over `pool`'s threads (each reading only its blocks' weights; a share must read
// at least kSplitPlain bytes for waking a thread to pay).
template <class W>
void blocked_run(ThreadPool* pool, const BlockedCall<W>& c) {
  const int64_t blocks = c.N / kBlock, block_bytes = c.K * kBlock * static_cast<int64_t>(sizeof(W));
  const int64_t min_blocks = block_bytes > 0 ? (kSplitPlain + block_bytes - 1) / block_bytes : 1;
  parallel_elements(pool, blocks, 4, min_blocks, [&](int64_t b0, int64_t b1) { blocked_blocks(c, b0, b1); });
}

}  // namespace
}  // namespace optimized
}  // namespace ember
