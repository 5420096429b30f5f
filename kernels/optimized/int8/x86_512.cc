// The kDot512 tier (level.h): AVX512-VNNI's VPDPBUSD on 512-bit vectors, sixteen output pixels per vector. The
// activations come offset by 128 (unsigned bytes), the weights are signed; each 32-bit lane sums four products.
// Compiled for those instructions as a whole file (as compute/gemm_avx512.cc); only int8_level() sends work here.
#include "kernels/optimized/int8/tier_kernels.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")
// gcc 12 warns that its own avx512fintrin.h reads an undefined vector it means to leave undefined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>
#include <string.h>

#include "compute/simd.h"

namespace ember {
namespace optimized {
namespace {

constexpr int kRows = 8;     // output channels per register tile (Int8Tile::rows)
constexpr int kVectors = 3;  // pixel vectors per register tile (Int8Tile::max_vectors)
constexpr int kLanes = 16;

EMBER_ALWAYS_INLINE int32_t load32(const void* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

// The output's zero point and clamp, shared by every channel of a call.
struct Range16 {
  __m512i lo, hi, zero_point;
  explicit Range16(const OutputRange& r)
      : lo(_mm512_set1_epi32(r.lo - r.zero_point)),
        hi(_mm512_set1_epi32(r.hi - r.zero_point)),
        zero_point(_mm512_set1_epi32(r.zero_point)) {}
};

// One channel's requantization on sixteen lanes: finish.h's finish_exact, with its three steps folded into one
// 64-bit expression. With P = sum * multiplier (exact in 64 bits), L = left and r = right, the steps give
//   q = floor((floor((P * 2^L + 2^30) / 2^31) + c) / 2^r),  c = 2^(r-1) less 1 for a negative middle term (0 if r = 0)
// which is floor((P + 2^(30-L) + c * 2^(31-L)) / 2^(31+r-L)) (nested floors of integer divisions, c an integer, L at
// most 30: RowFinish::exact), and the middle term is negative exactly when P < -2^(30-L). So per 64-bit product:
// an add, a compare, a masked subtract and an arithmetic shift.
struct Finish16 {
  __m512i multiplier, base, step, below;
  __m128i shift;

  explicit Finish16(const RowFinish& f) {
    const int L = f.left, r = f.right;
    multiplier = _mm512_set1_epi32(f.multiplier);
    const int64_t low = int64_t{1} << (30 - L);
    base = _mm512_set1_epi64(low + (r > 0 ? int64_t{1} << (r - 1 + 31 - L) : 0));
    step = _mm512_set1_epi64(r > 0 ? int64_t{1} << (31 - L) : 0);
    below = _mm512_set1_epi64(-low);
    shift = _mm_cvtsi32_si128(31 + r - L);
  }

  EMBER_ALWAYS_INLINE __m512i round64(__m512i p) const {
    const __m512i t = _mm512_add_epi64(p, base);
    return _mm512_sra_epi64(_mm512_mask_sub_epi64(t, _mm512_cmplt_epi64_mask(p, below), t, step), shift);
  }

  // The sum (correction included) to output values in int32 lanes, already clamped.
  EMBER_ALWAYS_INLINE __m512i apply(__m512i sum, const Range16& r) const {
    const __m512i even = round64(_mm512_mul_epi32(sum, multiplier));
    const __m512i odd = round64(_mm512_mul_epi32(_mm512_srli_epi64(sum, 32), multiplier));
    // Each 64-bit result fits int32 (it is the three steps' result): the low halves, interleaved back.
    const __m512i take = _mm512_set_epi32(30, 14, 28, 12, 26, 10, 24, 8, 22, 6, 20, 4, 18, 2, 16, 0);
    const __m512i q = _mm512_permutex2var_epi32(even, take, odd);
    return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, r.lo), r.hi), r.zero_point);
  }
};

EMBER_ALWAYS_INLINE __mmask16 first_lanes(int32_t n) {
  return n >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}

// Sixteen int32 lanes (in int8 range) to their first n bytes: VPMOVDB into a register, then a store (VPMOVDB's
// own memory form is microcoded on some cores, AMD's Zen 4 among them).
EMBER_ALWAYS_INLINE void store_bytes(int8_t* out, __m512i v, int32_t n) {
  const __m128i b = _mm512_cvtepi32_epi8(v);
  if (n >= kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), b);
  } else {
    _mm_mask_storeu_epi8(out, first_lanes(n), b);
  }
}

// The sums of a channel finished in 64 bits (RowFinish::exact false): spilled, then finish.h's scalar steps.
EMBER_ALWAYS_INLINE void finish_slow(__m512i sum, int32_t n, const RowFinish& f, const quantized::ChannelParams& c,
                                     int32_t zp_offset, const OutputRange& r, int8_t* out) {
  int32_t raw[kLanes];
  _mm512_storeu_si512(raw, sum);
  finish_row_scalar(raw, n, f, c, zp_offset, r, out);
}

// kRows x NV sums over the whole reduction: panel vectors `a` (NV of them, a_step bytes apart), weights `w`.
template <int NV>
EMBER_ALWAYS_INLINE void tile_sums(const uint8_t* a, size_t a_step, const int8_t* w, int32_t k_groups,
                                   const RowFinish* f, int32_t rows, __m512i (&acc)[kRows][NV]) {
  EMBER_UNROLL for (int m = 0; m < kRows; ++m) {
    // Rows past the group's channels have zero weights: their sums are never stored.
    const __m512i init = _mm512_set1_epi32(m < rows ? f[m].correction : 0);
    EMBER_UNROLL for (int v = 0; v < NV; ++v) acc[m][v] = init;
  }
  for (int32_t q = 0; q < k_groups; ++q) {
    __m512i x[NV];
    EMBER_UNROLL for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_si512(a + v * a_step + q * 64);
    EMBER_UNROLL for (int m = 0; m < kRows; ++m) {
      const __m512i b = _mm512_set1_epi32(load32(w + (q * kRows + m) * 4));
      EMBER_UNROLL for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_dpbusd_epi32(acc[m][v], x[v], b);
    }
  }
}

template <int NV>
void gemm_tile(const GemmTask& t, int32_t j0, int32_t block) {
  const size_t a_step = static_cast<size_t>(t.k_groups) * 64;
  const int32_t c0 = block * kRows;
  const int32_t rows = t.rows - c0 < kRows ? t.rows - c0 : kRows;
  __m512i acc[kRows][NV];
  tile_sums<NV>(t.panel + j0 * a_step, a_step, t.weights + static_cast<size_t>(block) * t.k_groups * kRows * 4,
                t.k_groups, t.finish + c0, rows, acc);
  const Range16 range(t.range);
  // Unrolled, so every accumulator is a register: a loop over a run-time count would index them in memory.
  EMBER_UNROLL for (int m = 0; m < kRows; ++m) {
    if (m >= rows) break;
    const RowFinish& f = t.finish[c0 + m];
    int8_t* o = t.out + (c0 + m) * t.out_stride + j0 * kLanes;
    if (!f.exact) {
      EMBER_UNROLL for (int v = 0; v < NV; ++v) {
        const int32_t n = t.pixels - (j0 + v) * kLanes;
        finish_slow(acc[m][v], n < kLanes ? n : kLanes, f, t.params[c0 + m], t.zero_point_plus_offset, t.range,
                    o + v * kLanes);
      }
      continue;
    }
    const Finish16 fin(f);
    EMBER_UNROLL for (int v = 0; v < NV; ++v) {
      const int32_t n = t.pixels - (j0 + v) * kLanes;
      store_bytes(o + v * kLanes, fin.apply(acc[m][v], range), n);
    }
  }
}

// Which loop goes outside: the register tiles read the panel from L1 and the weights stream past them (pixel tiles
// outside); but when the group's weights outweigh the panel (deep layers on small planes: a 3x3 layer of 512
// channels holds 2.4 MB) each tile would read them all from memory again, so the weight blocks go outside and the
// tiles read the panel, which stays in L2, once per block.
void gemm(const GemmTask& t) {
  const int32_t blocks = (t.rows + kRows - 1) / kRows;
  const int32_t tiles = (t.vectors + kVectors - 1) / kVectors;
  const size_t weight_bytes = static_cast<size_t>(blocks) * t.k_groups * kRows * 4;
  const size_t panel_bytes = static_cast<size_t>(t.vectors) * t.k_groups * 64;
  auto tile = [&](int32_t j0, int32_t b) {
    const int32_t nv = t.vectors - j0 < kVectors ? t.vectors - j0 : kVectors;

    if (nv == 3) {
      gemm_tile<3>(t, j0, b);
    } else if (nv == 2) {
      gemm_tile<2>(t, j0, b);
    } else {
      gemm_tile<1>(t, j0, b);
    }
  };
  if (tiles > 1 && weight_bytes > panel_bytes) {
    for (int32_t b = 0; b < blocks; ++b) {
      for (int32_t j0 = 0; j0 < t.vectors; j0 += kVectors) tile(j0, b);
    }
    return;
  }
  for (int32_t j0 = 0; j0 < t.vectors; j0 += kVectors) {
    for (int32_t b = 0; b < blocks; ++b) tile(j0, b);
  }
}

// Depthwise, in two steps per input channel (tier_kernels.h). Windows: each bordered input row (offset bytes) becomes
// a row of windows, sixteen per vector: lane l of a 128-bit lane's four windows starts 4 * l * sw bytes into the
// load, VPERMD brings that dword and the next three into the lane, VPSHUFB puts window j's taps (bytes j * sw +
// i * dw) into its 32-bit lane. Sums: every output row is then whole vectors of windows, one VPDPBUSD per kernel row
// and group of four taps, the weights in registers for the common kernels.
// The plane bordered with the zero point (offset bytes), then each of its rows as windows. The whole plane is
// written before any window is read from it: a load right after the stores it spans would wait for them.
void build_windows(const DepthwiseTask& t) {
  const uint8_t border = static_cast<uint8_t>(t.zero_point) ^ 0x80;
  const int32_t cols = t.plane_cols, W = t.W, pw = t.pw, ph = t.ph, H = t.H;
  memset(t.plane, border, t.plane_elements);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int32_t r = 0; r < t.window_rows; ++r) {
    const int32_t ih = r - ph;
    if (ih < 0 || ih >= H) continue;
    const int8_t* src = t.x + static_cast<size_t>(ih) * W;
    uint8_t* dst = t.plane + static_cast<size_t>(r) * cols + pw;
    int32_t w = 0;
    for (; w + 64 <= W; w += 64) _mm512_storeu_si512(dst + w, _mm512_xor_si512(_mm512_loadu_si512(src + w), flip));
    if (w < W) {
      const __mmask64 m = ~__mmask64{0} >> (64 - (W - w));
      _mm512_mask_storeu_epi8(dst + w, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + w), flip));
    }
  }
  int32_t dword_index[16];
  int8_t byte_index[64];
  for (int l = 0; l < 4; ++l) {
    for (int i = 0; i < 4; ++i) dword_index[l * 4 + i] = l * t.sw + i;
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) byte_index[l * 16 + j * 4 + i] = static_cast<int8_t>(j * t.sw + i * t.dw);
    }
  }
  const __m512i permute = _mm512_loadu_si512(dword_index), shuffle = _mm512_loadu_si512(byte_index);
  const int32_t pitch = t.window_pitch, sw = t.sw;
  for (int32_t r = 0; r < t.window_rows; ++r) {
    const uint8_t* row = t.plane + static_cast<size_t>(r) * cols;
    uint8_t* dst = t.windows + static_cast<size_t>(r) * pitch * 4;
    for (int32_t i = 0; i < pitch; i += kLanes) {
      const __m512i x = _mm512_loadu_si512(row + static_cast<size_t>(i) * sw);
      _mm512_storeu_si512(dst + i * 4, _mm512_shuffle_epi8(_mm512_permutexvar_epi32(permute, x), shuffle));
    }
  }
}

// One output channel from the windows. KH and KWG (kernel rows, groups of taps per row) fixed at compile time keep
// the weights in registers; 0 reads them from the task.
template <int KH, int KWG>
void depthwise_channel(const DepthwiseTask& t, const uint8_t* weights, const RowFinish& f,
                       const quantized::ChannelParams& c, int8_t* out) {
  const int32_t kh_count = KH ? KH : t.KH, g_count = KWG ? KWG : t.kw_groups;
  constexpr int kHeld = KH * KWG > 0 ? KH * KWG : 1;
  __m512i held[kHeld];
  EMBER_UNROLL for (int i = 0; i < kHeld; ++i) held[i] = _mm512_set1_epi32(KH ? load32(weights + i * 4) : 0);
  const Finish16 fin(f);
  const Range16 range(t.range);
  const __m512i init = _mm512_set1_epi32(f.correction);
  const size_t pitch = static_cast<size_t>(t.window_pitch) * 4, step = static_cast<size_t>(t.group_step) * 4;
  const size_t row_step = static_cast<size_t>(t.dh) * pitch;
  const int32_t OH = t.OH, OW = t.OW, sh = t.sh;
  const uint8_t* windows = t.windows;
  for (int32_t oh = 0; oh < OH; ++oh) {
    const uint8_t* top = windows + static_cast<size_t>(oh) * sh * pitch;
    int8_t* o = out + static_cast<size_t>(oh) * OW;
    for (int32_t ow0 = 0; ow0 < OW; ow0 += kLanes) {
      __m512i acc = init;
      const uint8_t* base = top + static_cast<size_t>(ow0) * 4;
      if (KH) {
        EMBER_UNROLL for (int kh = 0; kh < KH; ++kh) {
          EMBER_UNROLL for (int g = 0; g < KWG; ++g) {
            acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(base + kh * row_step + g * step), held[kh * KWG + g]);
          }
        }
      } else {
        for (int32_t kh = 0; kh < kh_count; ++kh) {
          for (int32_t g = 0; g < g_count; ++g) {
            const __m512i w = _mm512_set1_epi32(load32(weights + (kh * g_count + g) * 4));
            acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(base + kh * row_step + g * step), w);
          }
        }
      }
      const int32_t n = OW - ow0 < kLanes ? OW - ow0 : kLanes;
      if (f.exact) {
        store_bytes(o + ow0, fin.apply(acc, range), n);
      } else {
        finish_slow(acc, n, f, c, t.zero_point_plus_offset, t.range, o + ow0);
      }
    }
  }
}

void depthwise(const DepthwiseTask& t) {
  build_windows(t);
  const size_t taps = static_cast<size_t>(t.KH) * t.kw_groups * 4;
  const size_t plane = static_cast<size_t>(t.OH) * t.OW;
  for (int32_t m = 0; m < t.outputs; ++m) {
    const uint8_t* w = t.weights + m * taps;
    int8_t* out = t.out + m * plane;
    if (t.KH == 3 && t.kw_groups == 1) {
      depthwise_channel<3, 1>(t, w, t.finish[m], t.params[m], out);
    } else if (t.KH == 5 && t.kw_groups == 2) {
      depthwise_channel<5, 2>(t, w, t.finish[m], t.params[m], out);
    } else {
      depthwise_channel<0, 0>(t, w, t.finish[m], t.params[m], out);
    }
  }
}

// Linear: each weight row against the offset input row, 64 products per instruction, four rows per pass so the
// input's loads are shared; the tail through masked loads (zero bytes add nothing).
void dot_rows(const uint8_t* x, const int8_t* w, int32_t n, int32_t rows, int32_t* sums) {
  const int32_t whole = n & ~63;
  const __mmask64 tail = n - whole == 0 ? 0 : (~__mmask64{0} >> (64 - (n - whole)));
  int32_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const int8_t* w0 = w + static_cast<size_t>(r) * n;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int32_t k = 0; k < whole; k += 64) {
      const __m512i xv = _mm512_loadu_si512(x + k);
      a0 = _mm512_dpbusd_epi32(a0, xv, _mm512_loadu_si512(w0 + k));
      a1 = _mm512_dpbusd_epi32(a1, xv, _mm512_loadu_si512(w0 + n + k));
      a2 = _mm512_dpbusd_epi32(a2, xv, _mm512_loadu_si512(w0 + 2 * n + k));
      a3 = _mm512_dpbusd_epi32(a3, xv, _mm512_loadu_si512(w0 + 3 * n + k));
    }
    if (tail) {
      const __m512i xv = _mm512_maskz_loadu_epi8(tail, x + whole);
      a0 = _mm512_dpbusd_epi32(a0, xv, _mm512_maskz_loadu_epi8(tail, w0 + whole));
      a1 = _mm512_dpbusd_epi32(a1, xv, _mm512_maskz_loadu_epi8(tail, w0 + n + whole));
      a2 = _mm512_dpbusd_epi32(a2, xv, _mm512_maskz_loadu_epi8(tail, w0 + 2 * n + whole));
      a3 = _mm512_dpbusd_epi32(a3, xv, _mm512_maskz_loadu_epi8(tail, w0 + 3 * n + whole));
    }
    sums[r] = _mm512_reduce_add_epi32(a0);
    sums[r + 1] = _mm512_reduce_add_epi32(a1);
    sums[r + 2] = _mm512_reduce_add_epi32(a2);
    sums[r + 3] = _mm512_reduce_add_epi32(a3);
  }
  for (; r < rows; ++r) {
    const int8_t* wr = w + static_cast<size_t>(r) * n;
    __m512i a = _mm512_setzero_si512();
    for (int32_t k = 0; k < whole; k += 64) {
      a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(x + k), _mm512_loadu_si512(wr + k));
    }
    if (tail)
      a = _mm512_dpbusd_epi32(a, _mm512_maskz_loadu_epi8(tail, x + whole), _mm512_maskz_loadu_epi8(tail, wr + whole));
    sums[r] = _mm512_reduce_add_epi32(a);
  }
}

// RequantSteps on sixteen lanes in full (quantized::apply_requant_steps): the saturating left shift, the rounding
// doubling high multiply, the rounding right shift with ties away from zero.
struct Requant16 {
  __m512i multiplier, round_mask, round_half, above, below;
  __m128i left, right;

  explicit Requant16(const quantized::RequantSteps& s) {
    multiplier = _mm512_set1_epi32(s.multiplier);
    const int32_t mask = static_cast<int32_t>((int64_t{1} << s.right) - 1);
    round_mask = _mm512_set1_epi32(mask);
    round_half = _mm512_set1_epi32(mask >> 1);
    // Values beyond these overflow the left shift: they saturate.
    above = _mm512_set1_epi32(INT32_MAX >> s.left);
    below = _mm512_set1_epi32(INT32_MIN >> s.left);
    left = _mm_cvtsi32_si128(s.left);
    right = _mm_cvtsi32_si128(s.right);
  }

  EMBER_ALWAYS_INLINE __m512i apply(__m512i v) const {
    __m512i x = _mm512_sll_epi32(v, left);
    x = _mm512_mask_mov_epi32(x, _mm512_cmpgt_epi32_mask(v, above), _mm512_set1_epi32(INT32_MAX));
    x = _mm512_mask_mov_epi32(x, _mm512_cmplt_epi32_mask(v, below), _mm512_set1_epi32(INT32_MIN));
    const __m512i nudge = _mm512_set1_epi64(int64_t{1} << 30);
    const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, multiplier), nudge), 31);
    const __m512i odd =
        _mm512_slli_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), multiplier), nudge), 1);
    const __m512i high = _mm512_mask_blend_epi32(0xAAAA, even, odd);
    const __m512i remainder = _mm512_and_si512(high, round_mask);
    const __m512i threshold = _mm512_sub_epi32(round_half, _mm512_srai_epi32(high, 31));
    const __mmask16 up = _mm512_cmpgt_epi32_mask(remainder, threshold);
    const __m512i q = _mm512_sra_epi32(high, right);
    return _mm512_mask_add_epi32(q, up, q, _mm512_set1_epi32(1));
  }
};

// quantized::add_one on sixteen elements at a time: both inputs lifted and rescaled, the sum requantized.
void add(const int8_t* a, const int8_t* b, int64_t n, const AddTask& p, int8_t* out) {
  const Requant16 rs(p.self), ro(p.other), rout(p.out);
  const __m512i zs = _mm512_set1_epi32(p.zp_self), zo = _mm512_set1_epi32(p.zp_other);
  const __m512i lo = _mm512_set1_epi32(p.activation_min - p.zp_out),
                hi = _mm512_set1_epi32(p.activation_max - p.zp_out);
  const __m512i zp = _mm512_set1_epi32(p.zp_out);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = first_lanes(n - i < kLanes ? static_cast<int32_t>(n - i) : kLanes);
    const __m512i x = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, a + i));
    const __m512i y = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i));
    const __m512i vx = rs.apply(_mm512_slli_epi32(_mm512_sub_epi32(x, zs), p.lift));
    const __m512i vy = ro.apply(_mm512_slli_epi32(_mm512_sub_epi32(y, zo), p.lift));
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(rout.apply(_mm512_add_epi32(vx, vy)), lo), hi);
    store_bytes(out + i, _mm512_add_epi32(r, zp), static_cast<int32_t>(n - i < kLanes ? n - i : kLanes));
  }
}

// A panel group from four rows of taps, 64 pixels a step: the rows' bytes interleaved (VPUNPCK*, within each 128-bit
// lane), offset by 128, and the 128-bit lanes transposed (VSHUFI64X2) so each 512-bit store is one pixel vector. The
// last step loads with the zero point past the rows' end.
void pack(const int8_t* const* rows, int32_t pixels, int32_t vectors, int32_t zero_point, uint8_t* panel,
          size_t vector_step) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i zp = _mm512_set1_epi8(static_cast<char>(zero_point));
  for (int32_t p = 0, j = 0; j < vectors; p += 64, j += 4) {
    const int32_t left = pixels - p;
    const __mmask64 m = left >= 64 ? ~__mmask64{0} : left <= 0 ? 0 : (~__mmask64{0} >> (64 - left));
    const __m512i a = _mm512_xor_si512(_mm512_mask_loadu_epi8(zp, m, rows[0] + p), flip);
    const __m512i b = _mm512_xor_si512(_mm512_mask_loadu_epi8(zp, m, rows[1] + p), flip);
    const __m512i c = _mm512_xor_si512(_mm512_mask_loadu_epi8(zp, m, rows[2] + p), flip);
    const __m512i d = _mm512_xor_si512(_mm512_mask_loadu_epi8(zp, m, rows[3] + p), flip);
    const __m512i ab_lo = _mm512_unpacklo_epi8(a, b), ab_hi = _mm512_unpackhi_epi8(a, b);
    const __m512i cd_lo = _mm512_unpacklo_epi8(c, d), cd_hi = _mm512_unpackhi_epi8(c, d);
    // q0..q3: in each 128-bit lane L, the four-pixel chunks 16 L + 0, 4, 8, 12.
    const __m512i q0 = _mm512_unpacklo_epi16(ab_lo, cd_lo), q1 = _mm512_unpackhi_epi16(ab_lo, cd_lo);
    const __m512i q2 = _mm512_unpacklo_epi16(ab_hi, cd_hi), q3 = _mm512_unpackhi_epi16(ab_hi, cd_hi);
    const __m512i t0 = _mm512_shuffle_i64x2(q0, q1, 0x44), t1 = _mm512_shuffle_i64x2(q0, q1, 0xEE);
    const __m512i t2 = _mm512_shuffle_i64x2(q2, q3, 0x44), t3 = _mm512_shuffle_i64x2(q2, q3, 0xEE);
    const __m512i out[4] = {_mm512_shuffle_i64x2(t0, t2, 0x88), _mm512_shuffle_i64x2(t0, t2, 0xDD),
                            _mm512_shuffle_i64x2(t1, t3, 0x88), _mm512_shuffle_i64x2(t1, t3, 0xDD)};
    const int32_t count = vectors - j < 4 ? vectors - j : 4;
    for (int32_t v = 0; v < count; ++v) _mm512_storeu_si512(panel + (j + v) * vector_step, out[v]);
  }
}

// Sixteen floats a step; MAXPS returns its second operand where the first is NaN, which sends NaN to lo.
void quantize(const float* x, int64_t n, float inv_scale, float zero_point, float lo, float hi, int8_t* out) {
  const __m512 s = _mm512_set1_ps(inv_scale), z = _mm512_set1_ps(zero_point);
  const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = first_lanes(n - i < kLanes ? static_cast<int32_t>(n - i) : kLanes);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    const __m512 r = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    store_bytes(out + i, _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, l), h)),
                static_cast<int32_t>(n - i < kLanes ? n - i : kLanes));
  }
}

void finish(const int32_t* sums, int32_t n, const RowFinish& f, const OutputRange& range, int8_t* out) {
  const Finish16 fin(f);
  const Range16 r(range);
  for (int32_t i = 0; i < n; i += kLanes) {
    const int32_t count = n - i < kLanes ? n - i : kLanes;
    store_bytes(out + i, fin.apply(_mm512_maskz_loadu_epi32(first_lanes(count), sums + i), r), count);
  }
}

const TierKernels kKernels = {&gemm, &depthwise, &dot_rows, &add, &pack, &quantize, &finish};

}  // namespace

const TierKernels* x86_512_kernels() { return &kKernels; }

}  // namespace optimized
}  // namespace ember

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64

namespace ember {
namespace optimized {
const TierKernels* x86_512_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember

#endif
