// ember_llm::linear_int8.out and ember_llm::linear_8da4w.out for Float on x86-64 with AVX2+FMA (wider instruction
// sets chosen at run time, compute/simd.h) and on aarch64's NEON (always there; Linux and Android); other CPUs and
// dtypes run the portable kernels, whose checks, scratch and activation quantization (bit-exact to the reference)
// these share. Decode is a matrix-vector product bound by reading the weights, so each weight row is read once per
// tile of up to 4 tokens and unpacked in registers:
//   int8:  16 weights (AVX-512F) or 8 (AVX2, NEON) -> int32 -> float, one FMA per token.
//   8da4w, blocked layout (what the export writes when N is a multiple of 16): output channels across the vector,
//          the tokens' int8 q times the nibbles by int8 dot-product instructions, one int32 -> float conversion per
//          group for all of them: 16 channels per VPDPBUSD with AVX512-VNNI (int4_blocked_512), 8 with AVX-VNNI or
//          AVX2's VPMADDUBSW + VPMADDWD (int4_blocked_x86.inc), 4 per NEON widening multiply. The tokens are
//          quantized on the calling thread (on AVX2 8 at a time, quantize_tokens_avx2), then the channels split.
//          SmolLM-135M (group 32, this AVX-512 machine, llm_runner, one thread): decode 176 tok/s with the row
//          layout's kernel, 237 blocked on 256 bits, 260 on 512, 321 with the vector quantization.
//   8da4w, row layout: 16 bytes = 32 int4 weights widened to int16, split into two vectors of 16 nibbles (a mask
//          and a shift) less 8, multiplied with the token's int16 (q - z) by _mm256_madd_epi16 into int32 (exact:
//          |sum| <= 256 * 255 * 8 per group), then one int32 -> float conversion and FMA by the group's scale per
//          group and channel. NEON does the same in 128-bit halves (vmlal_s16), so its integer sums are AVX2's.
// With a thread pool, the output features are split between the threads (each reads only its share of the
// weights).
#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/parallel.h"
#include "compute/simd.h"
#include "kernels/optimized/blocked_linear.h"
#include "kernels/portable/kernels.h"

#if EMBER_SIMD_X86_DISPATCH
#include <immintrin.h>
#endif
// Not for Apple targets: Debian's clang 14 crashes parsing arm_neon.h for arm64-apple-ios (mangling vaddq_u64),
// so the iOS archive keeps portable's kernels for these two ops.
#if defined(__aarch64__) && !defined(__APPLE__)
#include <arm_neon.h>
#define EMBER_LLM_NEON 1
#else
#define EMBER_LLM_NEON 0
#endif

namespace ember {
namespace optimized {
namespace {

#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 EMBER_ALWAYS_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int TT>
EMBER_TARGET_AVX2 void int8_rows(const float* x, const int8_t* w, const float* scales, const float* bias, float* o,
                                 int64_t K, int64_t N, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const int8_t* wr = w + n * K;
    __m256 acc[TT];
    for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const __m128i w8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(wr + k));
      const __m256 wf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(w8));
      for (int t = 0; t < TT; ++t) acc[t] = _mm256_fmadd_ps(_mm256_loadu_ps(x + t * K + k), wf, acc[t]);
    }
    for (int t = 0; t < TT; ++t) {
      float sum = hsum(acc[t]);
      for (int64_t kk = k; kk < K; ++kk) sum += x[t * K + kk] * static_cast<float>(wr[kk]);
      float v = sum * scales[n];
      if (bias) v += bias[n];
      o[t * N + n] = v;
    }
  }
}

// The same on 512-bit vectors, 16 weights a step, where the CPU has AVX-512F: each step's conversions cost what 8
// weights' do on AVX2. SmolLM-135M int8 decode on this AVX-512 machine (llm_runner): 98 -> 164 tok/s on
// one thread, 157 -> 250 on two.
// (gcc 12 warns that its own avx512fintrin.h reads an undefined vector it means to leave undefined; silenced down to
// int4_blocked_512.)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <int TT>
__attribute__((target("avx512f,avx2,fma"))) void int8_rows_avx512(const float* x, const int8_t* w, const float* scales,
                                                                  const float* bias, float* o, int64_t K, int64_t N,
                                                                  int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const int8_t* wr = w + n * K;
    __m512 acc[TT];
    for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m128i w8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + k));
      const __m512 wf = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(w8));
      for (int t = 0; t < TT; ++t) acc[t] = _mm512_fmadd_ps(_mm512_loadu_ps(x + t * K + k), wf, acc[t]);
    }
    for (int t = 0; t < TT; ++t) {
      float sum = _mm512_reduce_add_ps(acc[t]);
      for (int64_t kk = k; kk < K; ++kk) sum += x[t * K + kk] * static_cast<float>(wr[kk]);
      float v = sum * scales[n];
      if (bias) v += bias[n];
      o[t * N + n] = v;
    }
  }
}
// d: TT rows of int16 (q - z); w: packed rows (K / 2 bytes each). Writes o[t * N + n] = ts[t] * sum_g I * scale
// + bias. A byte widened to int16 is split by one mask and one shift into nibbles stored as w + 8 (0 .. 15), and 8
// is subtracted from each there, once per block for every token of the tile: the group's exact I = sum d * w. (It
// had been sum d * (w + 8) - 8 * sum d, the correction summed from the tokens' block sums per group, row and
// token. Without it, under callgrind on SmolLM-135M 8da4w at group 32: the decode kernel (one token) runs 35%
// fewer instructions, 631.7M -> 412.5M for 4 tokens; the prefill tile of 4 tokens 64% fewer, 532.7M -> 193.1M.)
template <int TT>
EMBER_TARGET_AVX2 void int4_rows(const int16_t* d, const float* ts, const uint8_t* w, const float* scales,
                                 const float* bias, float* o, int64_t K, int64_t N, int64_t group, int64_t n0,
                                 int64_t n1) {
  const int64_t G = K / group;
  const __m256i low = _mm256_set1_epi16(15), eight = _mm256_set1_epi16(8);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = w + n * (K / 2);
    const float* sr = scales + n * G;
    __m256 facc[TT];
    for (int t = 0; t < TT; ++t) facc[t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
      __m256i iacc[TT];
      for (int t = 0; t < TT; ++t) iacc[t] = _mm256_setzero_si256();
      for (int64_t k = g * group; k < (g + 1) * group; k += 32) {
        const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + k / 2)));
        const __m256i w0 = _mm256_sub_epi16(_mm256_and_si256(b, low), eight);
        const __m256i w1 = _mm256_sub_epi16(_mm256_srli_epi16(b, 4), eight);
        for (int t = 0; t < TT; ++t) {
          const int16_t* dr = d + t * K + k;
          const __m256i p0 = _mm256_madd_epi16(w0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dr)));
          const __m256i p1 = _mm256_madd_epi16(w1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dr + 16)));
          iacc[t] = _mm256_add_epi32(iacc[t], _mm256_add_epi32(p0, p1));
        }
      }
      const __m256 s = _mm256_set1_ps(sr[g]);
      for (int t = 0; t < TT; ++t) facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc[t]), s, facc[t]);
    }
    for (int t = 0; t < TT; ++t) {
      float v = hsum(facc[t]) * ts[t];
      if (bias) v += bias[n];
      o[t * N + n] = v;
    }
  }
}

// portable::quantize_tokens_8da4w_int8 on 8 floats a step, to its bits: IEEE division by the token's scale, the
// same round-half-to-even by adding and taking off 1.5 * 2^23, and clamps that send NaN where portable's do (MINPS
// and MAXPS return their second operand when either is NaN). Serial before each split linear, it was 7% of 8da4w
// decode's time on the calling thread.
EMBER_TARGET_AVX2 void quantize_tokens_avx2(const float* x, int64_t rows, int64_t K, int64_t group,
                                            const portable::Int8Tokens& out) {
  const int64_t G = K / group;
  for (int64_t t = 0; t < rows; ++t) {
    const float* xr = x + t * K;
    __m256 lo8 = _mm256_setzero_ps(), hi8 = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k += 8) {  // K is a multiple of 32
      const __m256 v = _mm256_loadu_ps(xr + k);
      lo8 = _mm256_min_ps(v, lo8);  // lo stays +0.0 against -0.0 and NaN, as `v < lo ? v : lo`
      hi8 = _mm256_max_ps(v, hi8);
    }
    float lanes_lo[8], lanes_hi[8];
    _mm256_storeu_ps(lanes_lo, lo8);
    _mm256_storeu_ps(lanes_hi, hi8);
    float lo = 0.0f, hi = 0.0f;
    for (int i = 0; i < 8; ++i) {
      lo = lanes_lo[i] < lo ? lanes_lo[i] : lo;
      hi = lanes_hi[i] > hi ? lanes_hi[i] : hi;
    }
    float sc = (hi - lo) / 255.0f;
    if (sc == 0.0f) sc = 1.0f;
    float zf = (-128.0f - lo / sc + 12582912.0f) - 12582912.0f;
    zf = zf > 127.0f ? 127.0f : zf;
    zf = zf >= -128.0f ? zf : -128.0f;
    const int32_t z = static_cast<int32_t>(zf);
    int8_t* qr = out.q + t * K;
    int32_t* terms = out.terms + t * (G + 1);
    terms[0] = z;
    const __m256 s8 = _mm256_set1_ps(sc), magic = _mm256_set1_ps(12582912.0f), z8 = _mm256_set1_ps(zf);
    const __m256 top = _mm256_set1_ps(127.0f), bottom = _mm256_set1_ps(-128.0f);
    for (int64_t g = 0; g < G; ++g) {
      __m256i sum = _mm256_setzero_si256();
      for (int64_t k = g * group; k < (g + 1) * group; k += 8) {
        __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_div_ps(_mm256_loadu_ps(xr + k), s8), magic), magic);
        r = _mm256_max_ps(_mm256_min_ps(top, _mm256_add_ps(r, z8)), bottom);
        const __m256i q = _mm256_cvtps_epi32(r);
        sum = _mm256_add_epi32(sum, q);
        const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(qr + k), _mm_packs_epi16(q16, q16));
      }
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
      terms[1 + g] = -8 * (_mm_cvtsi128_si32(s4) - z * static_cast<int32_t>(group));
    }
    out.scale[t] = sc;
  }
}

// The blocked layout's 256-bit kernels (int4_blocked_x86.inc), for AVX-VNNI and AVX2. A product the compiler may
// not fuse with the addition after it (an empty asm it cannot see through), so the float steps stay portable's.
#define EMBER_I4_ROUNDED(v) __asm__("" : "+x"(v))
namespace avx_vnni {
#define EMBER_I4_TARGET __attribute__((target("avx2,fma,avxvnni")))
#define EMBER_I4_DOT(acc, u, s) _mm256_dpbusd_avx_epi32(acc, u, s)
#include "kernels/optimized/int4_blocked_x86.inc"
#undef EMBER_I4_TARGET
#undef EMBER_I4_DOT
}  // namespace avx_vnni
namespace avx2 {
#define EMBER_I4_TARGET EMBER_TARGET_AVX2
// Pairs of products into int16 first: |15 * q| * 2 <= 3840, far from saturating.
#define EMBER_I4_DOT(acc, u, s) \
  _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
#include "kernels/optimized/int4_blocked_x86.inc"
#undef EMBER_I4_TARGET
#undef EMBER_I4_DOT
}  // namespace avx2

// The same sums on 512-bit vectors: a unit is a whole block of 16 channels, one 64-byte load per octet, each lane
// one channel (byte 32h + 4c + i is lane 8h + c's). Units [u0, u1) are 8-channel units, always whole blocks here.
// SmolLM-135M 8da4w decode on this machine (llm_runner): 237 -> 255-267 tok/s on one thread against the 256-bit
// kernel, 290 -> 314-325 on two; prefill 340-450 -> 575 on one.
template <int TT>
__attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma"))) void int4_blocked_512_tile(
    const portable::Int8Tokens& tok, const uint8_t* w, const float* scales, const float* bias, float* o, int64_t K,
    int64_t N, int64_t group, int64_t u0, int64_t u1) {
  const int64_t G = K / group, octets = K / 8, per_group = group / 8;
  const __m512i mask = _mm512_set1_epi8(15), ones = _mm512_set1_epi8(1);
  for (int64_t b = u0 / 2; b < u1 / 2; ++b) {
    const uint8_t* wb = w + b * octets * 64;
    const float* sb = scales + b * G * 16;
    __m512 facc[TT];
    EMBER_UNROLL
    for (int t = 0; t < TT; ++t) facc[t] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
      __m512i acc[TT];
      EMBER_UNROLL
      for (int t = 0; t < TT; ++t) acc[t] = _mm512_set1_epi32(tok.terms[t * (G + 1) + 1 + g]);
      __m512i wsum = _mm512_setzero_si512();
      for (int64_t j = g * per_group; j < (g + 1) * per_group; ++j) {
        const __m512i v = _mm512_loadu_si512(wb + j * 64);
        const __m512i lo = _mm512_and_si512(v, mask);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
        wsum = _mm512_dpbusd_epi32(wsum, _mm512_add_epi8(lo, hi), ones);
        EMBER_UNROLL
        for (int t = 0; t < TT; ++t) {
          int32_t q0, q1;
          memcpy(&q0, tok.q + t * K + j * 8, 4);
          memcpy(&q1, tok.q + t * K + j * 8 + 4, 4);
          acc[t] = _mm512_dpbusd_epi32(acc[t], lo, _mm512_set1_epi32(q0));
          acc[t] = _mm512_dpbusd_epi32(acc[t], hi, _mm512_set1_epi32(q1));
        }
      }
      const __m512 sc = _mm512_loadu_ps(sb + g * 16);
      EMBER_UNROLL
      for (int t = 0; t < TT; ++t) {
        const __m512i z = _mm512_set1_epi32(tok.terms[t * (G + 1)] & 0xFFFF);
        const __m512i exact = _mm512_sub_epi32(acc[t], _mm512_madd_epi16(wsum, z));
        __m512 product = _mm512_mul_ps(_mm512_cvtepi32_ps(exact), sc);
        __asm__("" : "+v"(product));  // rounded before the addition, as portable's (see EMBER_I4_ROUNDED)
        facc[t] = _mm512_add_ps(facc[t], product);
      }
    }
    EMBER_UNROLL
    for (int t = 0; t < TT; ++t) {
      __m512 v = _mm512_mul_ps(facc[t], _mm512_set1_ps(tok.scale[t]));
      __asm__("" : "+v"(v));
      if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + b * 16));
      _mm512_storeu_ps(o + t * N + b * 16, v);
    }
  }
}

// Any number of tokens: tiles of 8 (32 registers hold 8 sums, 8 group sums and the unpacked weights, and each
// unpacked weight vector feeds 16 dot instructions instead of 8), then one tile of the 1 .. 7 left (4, then 3 .. 1).
__attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma"))) void int4_blocked_512(
    int64_t rows, const portable::Int8Tokens& tok, const uint8_t* w, const float* scales, const float* bias, float* o,
    int64_t K, int64_t N, int64_t group, int64_t u0, int64_t u1) {
  const int64_t G = K / group;
  int64_t m = 0;
  auto at = [&](int64_t t) { return portable::Int8Tokens{tok.q + t * K, tok.terms + t * (G + 1), tok.scale + t}; };
  for (; m + 8 <= rows; m += 8) int4_blocked_512_tile<8>(at(m), w, scales, bias, o + m * N, K, N, group, u0, u1);
  if (m + 4 <= rows) {
    int4_blocked_512_tile<4>(at(m), w, scales, bias, o + m * N, K, N, group, u0, u1);
    m += 4;
  }
  switch (rows - m) {
    case 3: int4_blocked_512_tile<3>(at(m), w, scales, bias, o + m * N, K, N, group, u0, u1); break;
    case 2: int4_blocked_512_tile<2>(at(m), w, scales, bias, o + m * N, K, N, group, u0, u1); break;
    case 1: int4_blocked_512_tile<1>(at(m), w, scales, bias, o + m * N, K, N, group, u0, u1); break;
    default: break;
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop  // pushed before int8_rows_avx512
#endif

using Int4BlockedFn = void (*)(int64_t, const portable::Int8Tokens&, const uint8_t*, const float*, const float*, float*,
                               int64_t, int64_t, int64_t, int64_t, int64_t);
// The best this CPU runs (called only where AVX2 and FMA are there), the output channels its units hold and the
// most tokens one call takes.
Int4BlockedFn int4_blocked_kernel(int64_t* unit_channels, int64_t* tile_tokens) {
  *unit_channels = 8;
  *tile_tokens = portable::kLlmTokenTile;
  if (cpu_has_avx512_vnni()) {
    *unit_channels = 16;
    *tile_tokens = 2 * portable::kLlmTokenTile;
    return int4_blocked_512;
  }
  if (cpu_has_avx_vnni()) return avx_vnni::int4_blocked;
  return avx2::int4_blocked;
}
#undef EMBER_I4_ROUNDED
#elif EMBER_LLM_NEON
// The same two kernels for NEON (same names: each target compiles one pair).
template <int TT>
void int8_rows(const float* x, const int8_t* w, const float* scales, const float* bias, float* o, int64_t K, int64_t N,
               int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const int8_t* wr = w + n * K;
    float32x4_t acc0[TT], acc1[TT];
    for (int t = 0; t < TT; ++t) acc0[t] = acc1[t] = vdupq_n_f32(0.0f);
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const int16x8_t w16 = vmovl_s8(vld1_s8(wr + k));
      const float32x4_t w0 = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w16)));
      const float32x4_t w1 = vcvtq_f32_s32(vmovl_high_s16(w16));
      for (int t = 0; t < TT; ++t) {
        acc0[t] = vfmaq_f32(acc0[t], vld1q_f32(x + t * K + k), w0);
        acc1[t] = vfmaq_f32(acc1[t], vld1q_f32(x + t * K + k + 4), w1);
      }
    }
    for (int t = 0; t < TT; ++t) {
      float sum = vaddvq_f32(vaddq_f32(acc0[t], acc1[t]));
      for (int64_t kk = k; kk < K; ++kk) sum += x[t * K + kk] * static_cast<float>(wr[kk]);
      float v = sum * scales[n];
      if (bias) v += bias[n];
      o[t * N + n] = v;
    }
  }
}

// Same arguments and exact integer sums as AVX2's int4_rows. Byte i of a 32-channel block's 16 bytes holds
// channel i in its low nibble and channel 16 + i in its high one.
template <int TT>
void int4_rows(const int16_t* d, const float* ts, const uint8_t* w, const float* scales, const float* bias, float* o,
               int64_t K, int64_t N, int64_t group, int64_t n0, int64_t n1) {
  const int64_t G = K / group;
  const uint8x16_t low = vdupq_n_u8(15);
  const int16x8_t eight = vdupq_n_s16(8);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = w + n * (K / 2);
    const float* sr = scales + n * G;
    float32x4_t facc[TT];
    for (int t = 0; t < TT; ++t) facc[t] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < G; ++g) {
      int32x4_t iacc[TT];
      for (int t = 0; t < TT; ++t) iacc[t] = vdupq_n_s32(0);
      for (int64_t k = g * group; k < (g + 1) * group; k += 32) {
        const uint8x16_t b = vld1q_u8(wr + k / 2);
        const uint8x16_t lo = vandq_u8(b, low), hi = vshrq_n_u8(b, 4);
        const int16x8_t w0 = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(lo))), eight);
        const int16x8_t w1 = vsubq_s16(vreinterpretq_s16_u16(vmovl_high_u8(lo)), eight);
        const int16x8_t w2 = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(hi))), eight);
        const int16x8_t w3 = vsubq_s16(vreinterpretq_s16_u16(vmovl_high_u8(hi)), eight);
        for (int t = 0; t < TT; ++t) {
          const int16_t* dr = d + t * K + k;
          const int16x8_t d0 = vld1q_s16(dr), d1 = vld1q_s16(dr + 8), d2 = vld1q_s16(dr + 16), d3 = vld1q_s16(dr + 24);
          int32x4_t a = iacc[t];
          a = vmlal_s16(a, vget_low_s16(w0), vget_low_s16(d0));
          a = vmlal_high_s16(a, w0, d0);
          a = vmlal_s16(a, vget_low_s16(w1), vget_low_s16(d1));
          a = vmlal_high_s16(a, w1, d1);
          a = vmlal_s16(a, vget_low_s16(w2), vget_low_s16(d2));
          a = vmlal_high_s16(a, w2, d2);
          a = vmlal_s16(a, vget_low_s16(w3), vget_low_s16(d3));
          iacc[t] = vmlal_high_s16(a, w3, d3);
        }
      }
      const float32x4_t s = vdupq_n_f32(sr[g]);
      for (int t = 0; t < TT; ++t) facc[t] = vfmaq_f32(facc[t], vcvtq_f32_s32(iacc[t]), s);
    }
    for (int t = 0; t < TT; ++t) {
      float v = vaddvq_f32(facc[t]) * ts[t];
      if (bias) v += bias[n];
      o[t * N + n] = v;
    }
  }
}

// The blocked layout (see int4_blocked_x86.inc for the sums). A unit's 32 bytes per octet are two vectors of 4
// channels x 4 inputs; the nibbles (0 .. 15) times the token's int8 q, low and high nibbles' products added in
// int16 (at most 2 * 15 * 128), go into int32 pairs per channel (vpadalq_s16), joined per group by one pairwise add.
// Exact integer sums and the portable kernel's float steps in its order, which gcc fuses into FMLAs here as it does
// in the portable kernel's build for aarch64 (within 1e-5 of it, not always the same bits).
template <int TT>
void int4_blocked_tile(const portable::Int8Tokens& tok, const uint8_t* w, const float* scales, const float* bias,
                       float* o, int64_t K, int64_t N, int64_t group, int64_t u0, int64_t u1) {
  const int64_t G = K / group, octets = K / 8, per_group = group / 8;
  const uint8x16_t mask = vdupq_n_u8(15);
  for (int64_t u = u0; u < u1; ++u) {
    const uint8_t* wu = w + (u >> 1) * octets * 64 + (u & 1) * 32;
    const float* su = scales + (u >> 1) * G * 16 + (u & 1) * 8;
    float32x4_t f0[TT], f1[TT];
    for (int t = 0; t < TT; ++t) f0[t] = f1[t] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < G; ++g) {
      int32x4_t a01[TT], a23[TT], a45[TT], a67[TT];  // channel pairs' int32 pairs
      for (int t = 0; t < TT; ++t) a01[t] = a23[t] = a45[t] = a67[t] = vdupq_n_s32(0);
      uint16x8_t w03 = vdupq_n_u16(0), w47 = vdupq_n_u16(0);
      for (int64_t j = g * per_group; j < (g + 1) * per_group; ++j) {
        const uint8x16_t v0 = vld1q_u8(wu + j * 64), v1 = vld1q_u8(wu + j * 64 + 16);
        const uint8x16_t lo0 = vandq_u8(v0, mask), hi0 = vshrq_n_u8(v0, 4);
        const uint8x16_t lo1 = vandq_u8(v1, mask), hi1 = vshrq_n_u8(v1, 4);
        w03 = vpadalq_u8(w03, vaddq_u8(lo0, hi0));
        w47 = vpadalq_u8(w47, vaddq_u8(lo1, hi1));
        const int8x16_t l0 = vreinterpretq_s8_u8(lo0), h0 = vreinterpretq_s8_u8(hi0);
        const int8x16_t l1 = vreinterpretq_s8_u8(lo1), h1 = vreinterpretq_s8_u8(hi1);
        for (int t = 0; t < TT; ++t) {
          int32_t q0, q1;
          memcpy(&q0, tok.q + t * K + j * 8, 4);
          memcpy(&q1, tok.q + t * K + j * 8 + 4, 4);
          const int8x16_t qa = vreinterpretq_s8_s32(vdupq_n_s32(q0)), qb = vreinterpretq_s8_s32(vdupq_n_s32(q1));
          a01[t] = vpadalq_s16(a01[t],
                               vmlal_s8(vmull_s8(vget_low_s8(l0), vget_low_s8(qa)), vget_low_s8(h0), vget_low_s8(qb)));
          a23[t] = vpadalq_s16(a23[t], vmlal_high_s8(vmull_high_s8(l0, qa), h0, qb));
          a45[t] = vpadalq_s16(a45[t],
                               vmlal_s8(vmull_s8(vget_low_s8(l1), vget_low_s8(qa)), vget_low_s8(h1), vget_low_s8(qb)));
          a67[t] = vpadalq_s16(a67[t], vmlal_high_s8(vmull_high_s8(l1, qa), h1, qb));
        }
      }
      const int32x4_t ws03 = vreinterpretq_s32_u32(vpaddlq_u16(w03)), ws47 = vreinterpretq_s32_u32(vpaddlq_u16(w47));
      const float32x4_t s0 = vld1q_f32(su + g * 16), s1 = vld1q_f32(su + g * 16 + 4);
      for (int t = 0; t < TT; ++t) {
        const int32_t z = tok.terms[t * (G + 1)];
        const int32x4_t term = vdupq_n_s32(tok.terms[t * (G + 1) + 1 + g]);
        const int32x4_t e0 = vmlsq_n_s32(vaddq_s32(vpaddq_s32(a01[t], a23[t]), term), ws03, z);
        const int32x4_t e1 = vmlsq_n_s32(vaddq_s32(vpaddq_s32(a45[t], a67[t]), term), ws47, z);
        f0[t] = vaddq_f32(f0[t], vmulq_f32(vcvtq_f32_s32(e0), s0));
        f1[t] = vaddq_f32(f1[t], vmulq_f32(vcvtq_f32_s32(e1), s1));
      }
    }
    for (int t = 0; t < TT; ++t) {
      const float32x4_t ts = vdupq_n_f32(tok.scale[t]);
      float32x4_t v0 = vmulq_f32(f0[t], ts), v1 = vmulq_f32(f1[t], ts);
      if (bias) {
        v0 = vaddq_f32(v0, vld1q_f32(bias + u * 8));
        v1 = vaddq_f32(v1, vld1q_f32(bias + u * 8 + 4));
      }
      vst1q_f32(o + t * N + u * 8, v0);
      vst1q_f32(o + t * N + u * 8 + 4, v1);
    }
  }
}

void int4_blocked(int64_t rows, const portable::Int8Tokens& tok, const uint8_t* w, const float* scales,
                  const float* bias, float* o, int64_t K, int64_t N, int64_t group, int64_t u0, int64_t u1) {
  switch (rows) {
    case 4: int4_blocked_tile<4>(tok, w, scales, bias, o, K, N, group, u0, u1); break;
    case 3: int4_blocked_tile<3>(tok, w, scales, bias, o, K, N, group, u0, u1); break;
    case 2: int4_blocked_tile<2>(tok, w, scales, bias, o, K, N, group, u0, u1); break;
    default: int4_blocked_tile<1>(tok, w, scales, bias, o, K, N, group, u0, u1); break;
  }
}
using Int4BlockedFn = decltype(&int4_blocked);
Int4BlockedFn int4_blocked_kernel(int64_t* unit_channels, int64_t* tile_tokens) {
  *unit_channels = 8;
  *tile_tokens = portable::kLlmTokenTile;
  return int4_blocked;
}
#endif

// Output features per thread below which a call stays on one thread: each must read at least kSplitPlain bytes
// of weights (`row_bytes` a feature) for waking a thread to pay.
#if EMBER_SIMD_X86_DISPATCH || EMBER_LLM_NEON
int64_t split_rows(int64_t row_bytes) { return row_bytes > 0 ? (kSplitPlain + row_bytes - 1) / row_bytes : 1; }
#endif

// Whether this CPU runs the vector kernels above.
#if EMBER_SIMD_X86_DISPATCH
bool vector_path() { return cpu_has_avx2_fma(); }
#elif EMBER_LLM_NEON
bool vector_path() { return true; }
#endif

}  // namespace

void linear_int8_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& scales,
                     const Tensor* bias, Tensor& out) {
#if EMBER_SIMD_X86_DISPATCH || EMBER_LLM_NEON
  if (computes_float(selected_dtypes::linear_int8_out_optimized, x) && vector_path()) {
    portable::LlmLinearShape s;
    if (!portable::linear_int8_checks(ctx, "ember_llm::linear_int8.out", x, weight, scales, bias, out, &s)) return;
    const float* xs = x.const_data_ptr<float>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    const float* sc = scales.const_data_ptr<float>();
    const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
    float* o = out.mutable_data_ptr<float>();
    // The blocked layout: blocked_linear.h's token x block tiles (prefill reads each weight once, not per 4 tokens).
    if (s.blocked) return blocked_run(ctx.threads(), BlockedCall<int8_t>{xs, s.M, s.K, s.N, w, sc, b, o});
    // Output features split over the method's threads: each reads only its rows of the weights.
#if EMBER_SIMD_X86_DISPATCH
    const bool wide = cpu_has_avx512f();
#endif
    parallel_elements(ctx.threads(), s.N, 8, split_rows(s.K), [&](int64_t n0, int64_t n1) {
      int64_t m = 0;
#if EMBER_SIMD_X86_DISPATCH
      if (wide) {
        for (; m + 4 <= s.M; m += 4) int8_rows_avx512<4>(xs + m * s.K, w, sc, b, o + m * s.N, s.K, s.N, n0, n1);
        for (; m < s.M; ++m) int8_rows_avx512<1>(xs + m * s.K, w, sc, b, o + m * s.N, s.K, s.N, n0, n1);
        return;
      }
#endif
      for (; m + 4 <= s.M; m += 4) int8_rows<4>(xs + m * s.K, w, sc, b, o + m * s.N, s.K, s.N, n0, n1);
      for (; m < s.M; ++m) int8_rows<1>(xs + m * s.K, w, sc, b, o + m * s.N, s.K, s.N, n0, n1);
    });
    return;
  }
#endif
  portable::linear_int8_out(ctx, x, weight, scales, bias, out);
}

KernelMemory linear_8da4w_memory(const KernelArgs& args) { return portable::linear_8da4w_memory(args); }

void linear_8da4w_out(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                      int64_t group_size, const Tensor* bias, Tensor& out) {
#if EMBER_SIMD_X86_DISPATCH || EMBER_LLM_NEON
  if (computes_float(selected_dtypes::linear_8da4w_out_optimized, x) && vector_path()) {
    portable::LlmLinearShape s;
    if (!portable::linear_8da4w_checks(ctx, x, packed_weight, scales, group_size, bias, out, &s)) return;
    if (s.blocked) {
      const portable::Int8Tokens tok =
          portable::linear_8da4w_int8_tokens(ctx, s.M < portable::kLlmTokenChunk ? s.M : portable::kLlmTokenChunk, s.K,
                                             group_size);
      int64_t unit = 8, tile = portable::kLlmTokenTile;
      const Int4BlockedFn kernel = int4_blocked_kernel(&unit, &tile);
      const float* xs = x.const_data_ptr<float>();
      const uint8_t* w = packed_weight.const_data_ptr<uint8_t>();
      const float* sc = scales.const_data_ptr<float>();
      const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
      float* o = out.mutable_data_ptr<float>();
      const int64_t G = s.K / group_size, chunk = 4 * unit;
      // A chunk of tokens quantized first, on this thread; then per few units of output channels (whose weights
      // stay in L1) every tile of those tokens, so each weight is read once per chunk rather than once per tile.
      for (int64_t t0 = 0; t0 < s.M; t0 += portable::kLlmTokenChunk) {
        const int64_t tokens = s.M - t0 < portable::kLlmTokenChunk ? s.M - t0 : portable::kLlmTokenChunk;
#if EMBER_SIMD_X86_DISPATCH
        quantize_tokens_avx2(xs + t0 * s.K, tokens, s.K, group_size, tok);
#else
        portable::quantize_tokens_8da4w_int8(xs + t0 * s.K, tokens, s.K, group_size, tok);
#endif
        parallel_elements(ctx.threads(), s.N, unit, split_rows(s.K / 2), [&](int64_t n0, int64_t n1) {
          for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
            const int64_t c1 = n1 - c0 < chunk ? n1 : c0 + chunk;
            for (int64_t m0 = 0; m0 < tokens; m0 += tile) {
              const int64_t rows = tokens - m0 < tile ? tokens - m0 : tile;
              const portable::Int8Tokens t{tok.q + m0 * s.K, tok.terms + m0 * (G + 1), tok.scale + m0};
              kernel(rows, t, w, sc, b, o + (t0 + m0) * s.N, s.K, s.N, group_size, c0 / 8, c1 / 8);
            }
          }
        });
      }
      return;
    }
    float* ts = nullptr;
    int16_t* d = portable::linear_8da4w_tokens(ctx, s.M, s.K, &ts);
    const float* xs = x.const_data_ptr<float>();
    const uint8_t* w = packed_weight.const_data_ptr<uint8_t>();
    const float* sc = scales.const_data_ptr<float>();
    const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
    float* o = out.mutable_data_ptr<float>();
    for (int64_t m0 = 0; m0 < s.M; m0 += portable::kLlmTokenTile) {
      const int64_t rows = s.M - m0 < portable::kLlmTokenTile ? s.M - m0 : portable::kLlmTokenTile;
      portable::quantize_tokens_8da4w(xs + m0 * s.K, rows, s.K, d, ts);
      float* orow = o + m0 * s.N;
      // The tile's tokens quantized once, on this thread; then output features split over the method's threads.
      parallel_elements(ctx.threads(), s.N, 8, split_rows(s.K / 2), [&](int64_t n0, int64_t n1) {
        switch (rows) {
          case 4: int4_rows<4>(d, ts, w, sc, b, orow, s.K, s.N, group_size, n0, n1); break;
          case 3: int4_rows<3>(d, ts, w, sc, b, orow, s.K, s.N, group_size, n0, n1); break;
          case 2: int4_rows<2>(d, ts, w, sc, b, orow, s.K, s.N, group_size, n0, n1); break;
          default: int4_rows<1>(d, ts, w, sc, b, orow, s.K, s.N, group_size, n0, n1); break;
        }
      });
    }
    return;
  }
#endif
  portable::linear_8da4w_out(ctx, x, packed_weight, scales, group_size, bias, out);
}

}  // namespace optimized
}  // namespace ember
