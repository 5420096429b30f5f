// convolution for Float, NCHW. Three shapes of work:
//  - pointwise (1x1, stride 1, no padding): out[n] = W @ x[n] is one GEMM per image and group, read in place;
//  - depthwise (one input channel per group): per channel, vector sweeps along output rows over a zero-bordered
//    copy of the plane in scratch, so no tap needs a bounds check (3x3 at unit stride; any other kernel size and
//    stride 2 with the copy split by column parity);
//  - everything else: GEMM over the im2col matrix, which is never stored: sgemm_packed asks for it one K block of
//    one register tile's columns at a time, written straight into the panels its tiles read (planned scratch of
//    at most 256 x 192 floats; direct loops when called without it).
// Scratch is planned: convolution_memory says, from the shapes, how much the chosen path uses, and the method
// hands exactly that (MethodMeta::scratch_bytes). Depthwise asks for a slice per thread and splits its channels
// over as many threads as the method planned slices for. Called without scratch (a kernel test), the depthwise
// path checks bounds per tap and im2col falls back to direct loops: slower, same results.
// The bias is added in the GEMM's epilogue, and so is the clamp of convolution_clamp (exir's opt-in
// fuse_activations: conv + relu/hardtanh/clamp as one call); the depthwise sweeps clamp each output row as they
// write it. Plain convolution is the same code with infinite bounds. convolution_silu (conv + SiLU, the same
// option) applies SiLU to each block of output while it is still in cache: a depthwise plane, an im2col GEMM call's
// columns, a pointwise GEMM's column chunk. Other dtypes and dim orders (channels-last) go to portable.
// Transposed convolution is refused, as portable does.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/optimized/kernels.h"
#include "compute/gemm.h"
#include "compute/simd.h"
#include "compute/vec_math.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/conv_util.h"

namespace ember {
namespace optimized {
namespace {

using portable::ConvGeometry;

// NaN stays NaN, as in ATen and the GEMM's epilogue: both comparisons are false for it.
EMBER_ALWAYS_INLINE float clamp(float x, float lo, float hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

// SiLU in place over `rows` rows of `cols` floats, row stride ld: x / (1 + exp(-x)), as kernels/optimized's silu
// computes it, so a fused program matches an unfused one bit for bit.
template <class V>
EMBER_ALWAYS_INLINE void silu_rows(float* c, int64_t ld, int64_t rows, int64_t cols) {
  constexpr int L = Lanes<V>::value;
  for (int64_t r = 0; r < rows; ++r) {
    float* p = c + r * ld;
    int64_t i = 0;
    for (; i + L <= cols; i += L) {
      const V x = vload<V>(p + i);
      vstore(p + i, x / (1.0f + vexp(-x)));
    }
    if (i < cols) {  // the tail through one zero-padded vector, rounding as the body does
      float buf[L] = {};
      memcpy(buf, p + i, static_cast<size_t>(cols - i) * sizeof(float));
      const V x = vload<V>(buf);
      vstore(buf, x / (1.0f + vexp(-x)));
      memcpy(p + i, buf, static_cast<size_t>(cols - i) * sizeof(float));
    }
  }
}

void silu_rows_baseline(float* c, int64_t ld, int64_t rows, int64_t cols) { silu_rows<f32x4>(c, ld, rows, cols); }
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void silu_rows_avx2(float* c, int64_t ld, int64_t rows, int64_t cols) {
  silu_rows<f32x8>(c, ld, rows, cols);
}
EMBER_TARGET_AVX512 void silu_rows_avx512(float* c, int64_t ld, int64_t rows, int64_t cols) {
  silu_rows<f32x16>(c, ld, rows, cols);
}
#endif

void silu_block(float* c, int64_t ld, int64_t rows, int64_t cols) {
#if EMBER_SIMD_X86_DISPATCH
  if (cpu_has_avx512f()) return silu_rows_avx512(c, ld, rows, cols);
  if (cpu_has_avx2_fma()) return silu_rows_avx2(c, ld, rows, cols);
#endif
  silu_rows_baseline(c, ld, rows, cols);
}

// One output plane of a depthwise convolution: input plane x (H x W), filter w (KH x KW).
EMBER_ALWAYS_INLINE void depthwise_plane(const ConvGeometry& g, const float* x, const float* w, float bias, float lo,
                                         float hi, float* o) {
  const int64_t sw = g.sw, W = g.W, OW = g.OW;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    float* orow = o + oh * OW;
    for (int64_t ow = 0; ow < OW; ++ow) orow[ow] = bias;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      const float* irow = x + ih * W;
      const float* wk = w + kh * g.KW;
      // Input column of output ow and tap kw: ow * sw + base + kw * dw.
      const int64_t base = -g.pw;
      int64_t in_lo = 0, in_hi = OW;  // outputs whose taps are all inside the row
      if (g.KW == 3 && g.dw == 1 && (sw == 1 || sw == 2)) {
        in_lo = base >= 0 ? 0 : (-base + sw - 1) / sw;
        in_hi = W - 3 - base < 0 ? 0 : (W - 3 - base) / sw + 1;
        if (in_hi > OW) in_hi = OW;
        if (in_hi < in_lo) in_hi = in_lo;
        const float w0 = wk[0], w1 = wk[1], w2 = wk[2];
        // The hot loop of MobileNet-style models: three taps per output, unit or double stride.
        if (sw == 1) {
          const float* s = irow + base;
          for (int64_t ow = in_lo; ow < in_hi; ++ow) orow[ow] += w0 * s[ow] + w1 * s[ow + 1] + w2 * s[ow + 2];
        } else {
          const float* s = irow + base;
          for (int64_t ow = in_lo; ow < in_hi; ++ow) {
            orow[ow] += w0 * s[2 * ow] + w1 * s[2 * ow + 1] + w2 * s[2 * ow + 2];
          }
        }
      } else {
        in_lo = in_hi = 0;
      }
      // Everything the fast loop did not cover, tap by tap with bounds.
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (ow == in_lo) ow = in_hi;
        if (ow >= OW) break;
        float acc = 0.0f;
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t iw = ow * sw + base + kw * g.dw;
          if (iw >= 0 && iw < W) acc += wk[kw] * irow[iw];
        }
        orow[ow] += acc;
      }
    }
    // The row is complete only after its last tap row; clamped now, while it is still in L1.
    for (int64_t ow = 0; ow < OW; ++ow) orow[ow] = clamp(orow[ow], lo, hi);
  }
}

// Slack after each region of the 3x3 scratch: the unit-stride sweep runs whole vectors, so its last one reads and
// writes up to a vector (16 floats at most) past the plane.
constexpr int64_t kSlackFloats = 16;
// Output rows narrower than this take the sweep over the whole plane as one row; wider ones are swept row by row
// straight into the output (no second pass, no plane-sized scratch out of L1).
constexpr int64_t kFlatMaxWidth = 32;

// n floats from s to d: vectors, the last one overlapping, so the short rows of small planes cost no call into the
// C library (MobileNetV2 0.35: a 3x3 plane is three 12-byte copies per channel), nor do im2col's runs (up to 24).
template <class V>
EMBER_ALWAYS_INLINE void copy_row(float* d, const float* s, int64_t n) {
  constexpr int64_t L = Lanes<V>::value;
  if (n >= L) {
    int64_t i = 0;
    for (; i + L <= n; i += L) vstore<V>(d + i, vload<V>(s + i));
    if (i < n) vstore<V>(d + n - L, vload<V>(s + n - L));
  } else if (n >= 4) {  // 4 .. L - 1 floats (up to 15 with 16-float vectors): quarter vectors, the last overlapping
    for (int64_t i = 0; i + 4 < n; i += 4) vstore<f32x4>(d + i, vload<f32x4>(s + i));
    vstore<f32x4>(d + n - 4, vload<f32x4>(s + n - 4));
  } else {
    if (n > 0) d[0] = s[0];
    if (n > 1) d[1] = s[1];
    if (n > 2) d[2] = s[2];
  }
}

// copy_row, clamping to [lo, hi] on the way.
template <class V>
EMBER_ALWAYS_INLINE void clamp_row(float* d, const float* s, int64_t n, float lo, float hi) {
  constexpr int64_t L = Lanes<V>::value;
  if (n >= L) {
    const V vlo = vsplat<V>(lo), vhi = vsplat<V>(hi);
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      V x = vload<V>(s + i);
      x = x < vlo ? vlo : x;
      vstore<V>(d + i, x > vhi ? vhi : x);
    }
    if (i < n) {
      V x = vload<V>(s + n - L);
      x = x < vlo ? vlo : x;
      vstore<V>(d + n - L, x > vhi ? vhi : x);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i] = clamp(s[i], lo, hi);
}

// 3x3 over a copy of the plane with a zero border (`padded`, (H + 2ph) x (W + 2pw), border already zero): every
// tap is in bounds, so an output row is one pass of nine multiply-adds and one store, which the compiler
// vectorizes for stride 1 (stride 2 reads every other column).
template <class V>
EMBER_ALWAYS_INLINE void depthwise3x3_padded(const ConvGeometry& g, const float* x, const float* w, float bias,
                                             float lo, float hi, float* padded, float* flat, float* o) {
  const int64_t Wp = g.W + 2 * g.pw, sh = g.sh, sw = g.sw, dh = g.dh, dw = g.dw, OW = g.OW;
  for (int64_t ih = 0; ih < g.H; ++ih) copy_row<V>(padded + (ih + g.ph) * Wp + g.pw, x + ih * g.W, g.W);
  if (flat != nullptr && sh == 1 && sw == 1 && dh == 1 && dw == 1 && OW < kFlatMaxWidth) {
    // Unit stride, small plane: the plane as one long row of stride Wp. Output q = oh * Wp + ow reads
    // padded[q + tap], so one vector loop covers every row (and the Wp - OW columns between rows, computed and
    // dropped); MobileNet's 12x12 down to 3x3 planes would otherwise run mostly in per-row scalar tails. Whole
    // vectors only (the scratch has slack), and three partial sums, one per filter row, so a plane of one or two
    // vectors is not one long chain of dependent multiply-adds.
    constexpr int64_t L = Lanes<V>::value;
    const int64_t n = (g.OH - 1) * Wp + OW;
    const V w0 = vsplat<V>(w[0]), w1 = vsplat<V>(w[1]), w2 = vsplat<V>(w[2]), w3 = vsplat<V>(w[3]),
            w4 = vsplat<V>(w[4]), w5 = vsplat<V>(w[5]), w6 = vsplat<V>(w[6]), w7 = vsplat<V>(w[7]),
            w8 = vsplat<V>(w[8]), vb = vsplat<V>(bias);
    const float* p0 = padded;
    const float* p1 = padded + Wp;
    const float* p2 = padded + 2 * Wp;
    for (int64_t q = 0; q < n; q += L) {
      const V s0 = vb + w0 * vload<V>(p0 + q) + w1 * vload<V>(p0 + q + 1) + w2 * vload<V>(p0 + q + 2);
      const V s1 = w3 * vload<V>(p1 + q) + w4 * vload<V>(p1 + q + 1) + w5 * vload<V>(p1 + q + 2);
      const V s2 = w6 * vload<V>(p2 + q) + w7 * vload<V>(p2 + q + 1) + w8 * vload<V>(p2 + q + 2);
      vstore<V>(flat + q, s0 + s1 + s2);
    }
    for (int64_t oh = 0; oh < g.OH; ++oh) clamp_row<V>(o + oh * OW, flat + oh * Wp, OW, lo, hi);
    return;
  }
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* __restrict r0 = padded + oh * sh * Wp;
    const float* __restrict r1 = r0 + dh * Wp;
    const float* __restrict r2 = r1 + dh * Wp;
    float* __restrict orow = o + oh * OW;
    if (sw == 1 && dw == 1) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        orow[ow] = clamp(bias + w0 * r0[ow] + w1 * r0[ow + 1] + w2 * r0[ow + 2] + w3 * r1[ow] + w4 * r1[ow + 1] +
                             w5 * r1[ow + 2] + w6 * r2[ow] + w7 * r2[ow + 1] + w8 * r2[ow + 2],
                         lo, hi);
      }
    } else if (sw == 2 && dw == 1) {
      // Stride 2 as a constant: a fifth fewer instructions than the general loop here (callgrind, MobileNetV2).
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t i = 2 * ow;
        orow[ow] = clamp(bias + w0 * r0[i] + w1 * r0[i + 1] + w2 * r0[i + 2] + w3 * r1[i] + w4 * r1[i + 1] +
                             w5 * r1[i + 2] + w6 * r2[i] + w7 * r2[i + 1] + w8 * r2[i + 2],
                         lo, hi);
      }
    } else {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t i = ow * sw;
        orow[ow] = clamp(bias + w0 * r0[i] + w1 * r0[i + dw] + w2 * r0[i + 2 * dw] + w3 * r1[i] + w4 * r1[i + dw] +
                             w5 * r1[i + 2 * dw] + w6 * r2[i] + w7 * r2[i + dw] + w8 * r2[i + 2 * dw],
                         lo, hi);
      }
    }
  }
}

// Any KH x KW, unit dilation, horizontal stride 1 or 2, any vertical stride (EfficientNet's and MobileNetV3's
// 5x5, and every stride-2 depthwise layer), over a zero-bordered copy of the plane. At stride 2 the copy is split
// by column parity into two half-width planes (even padded columns, then odd), so that output column ow's tap kw
// reads column ow + kw / 2 of one of them: every tap of every output is then a unit-stride vector load, where
// reading every other float would leave the compiler scalar code. Each output row is swept in blocks of four
// vectors (four independent sums, so the multiply-adds do not wait on each other), then single vectors; the last
// partial vector is recomputed overlapping the one before it, or, on rows narrower than a vector, computed whole
// into a local and copied (its taps read into the next row or the scratch's slack, never past it).
// Planes with output rows narrower than kFlatMaxWidth are swept as one long row instead (depthwise_general_flat_sweep),
// at stride 1, and at stride 2 both ways with the copy split by row parity as well: four quarter planes.
bool depthwise_general_ok(const ConvGeometry& g) { return g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2); }

// A decision from the shapes alone, so the planned scratch does not depend on the instruction set.
bool depthwise_general_flat(const ConvGeometry& g) {
  return g.OW < kFlatMaxWidth && (g.sh == 1 || (g.sh == 2 && g.sw == 2));
}

// The copy: row_phases x phases planes of rows x cols floats each (both counts 1 or 2). Padded element (r, c) is at
// ((r % row_phases) * phases + c % phases) * rows * cols + (r / row_phases) * cols + c / phases, written with masks
// and shifts: these run per tap.
struct PhasedPlane {
  int64_t rows, cols, phases, row_phases;

  int64_t size() const { return rows * cols; }  // floats per phase
  // Padded row r (its column phase 0).
  float* row(float* plane, int64_t r) const {
    return plane + (r & (row_phases - 1)) * phases * size() + (r >> (row_phases - 1)) * cols;
  }
  // Where tap (kh, kw) of output (0, 0) reads.
  const float* tap(const float* plane, int64_t kh, int64_t kw) const {
    return plane + ((kh & (row_phases - 1)) * phases + (kw & (phases - 1))) * size() + (kh >> (row_phases - 1)) * cols +
           (kw >> (phases - 1));
  }
};

EMBER_ALWAYS_INLINE PhasedPlane phased_plane(const ConvGeometry& g) {
  const int64_t hp = g.H + 2 * g.ph, wp = g.W + 2 * g.pw;
  const int64_t row_phases = depthwise_general_flat(g) ? g.sh : 1;
  return {(hp + row_phases - 1) / row_phases, (wp + g.sw - 1) / g.sw, g.sw, row_phases};
}

// Floats of the phased copy (with slack), which depthwise() zeroes once per call.
int64_t depthwise_phased_floats(const ConvGeometry& g) {
  const PhasedPlane pp = phased_plane(g);
  return pp.row_phases * pp.phases * pp.size() + kSlackFloats;
}

// The flat sweep's output: output (oh, ow) at oh * cols + ow (the columns between output rows computed and dropped).
int64_t depthwise_general_scratch_floats(const ConvGeometry& g) {
  const int64_t flat = depthwise_general_flat(g) ? g.OH * phased_plane(g).cols + kSlackFloats : 0;
  return depthwise_phased_floats(g) + flat;
}

// Even and odd elements of two vectors [a, b] (a's first, then b's).
template <class V>
struct Deinterleave;
template <>
struct Deinterleave<f32x4> {
  static EMBER_ALWAYS_INLINE void run(f32x4 a, f32x4 b, f32x4& even, f32x4& odd) {
    even = __builtin_shufflevector(a, b, 0, 2, 4, 6);
    odd = __builtin_shufflevector(a, b, 1, 3, 5, 7);
  }
};
template <>
struct Deinterleave<f32x8> {
  static EMBER_ALWAYS_INLINE void run(f32x8 a, f32x8 b, f32x8& even, f32x8& odd) {
    even = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    odd = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
  }
};
template <>
struct Deinterleave<f32x16> {
  static EMBER_ALWAYS_INLINE void run(f32x16 a, f32x16 b, f32x16& even, f32x16& odd) {
    even = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    odd = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  }
};

// Copies the plane x into the phased scratch (whose border is already zero).
template <class V>
EMBER_ALWAYS_INLINE void fill_phased(const ConvGeometry& g, const PhasedPlane& pp, const float* x, float* plane) {
  constexpr int64_t L = Lanes<V>::value;
  if (pp.phases == 1) {
    for (int64_t ih = 0; ih < g.H; ++ih) copy_row<V>(pp.row(plane, ih + g.ph) + g.pw, x + ih * g.W, g.W);
    return;
  }
  const int64_t phase = pp.size();
  for (int64_t ih = 0; ih < g.H; ++ih) {
    const float* s = x + ih * g.W;
    float* row = pp.row(plane, ih + g.ph);
    // Padded column c = iw + pw lands in phase c % 2 at column c / 2. Element iw0 (0 or 1) starts an even column.
    const int64_t iw0 = g.pw & 1;
    for (int64_t iw = 0; iw < iw0 && iw < g.W; ++iw) row[phase + (iw + g.pw) / 2] = s[iw];
    float* even = row + (iw0 + g.pw) / 2;
    float* odd = row + phase + (iw0 + g.pw) / 2;
    int64_t iw = iw0, j = 0;
    for (; iw + 2 * L <= g.W; iw += 2 * L, j += L) {
      V e, o;
      Deinterleave<V>::run(vload<V>(s + iw), vload<V>(s + iw + L), e, o);
      vstore<V>(even + j, e);
      vstore<V>(odd + j, o);
    }
    // The rest in pairs of quarter vectors: a 28-wide row would otherwise be 27 scalar stores with 16-float vectors,
    // which made EfficientNet-B0's 28x28 -> 14x14 layer take 4x its multiply-adds' time.
    for (; iw + 8 <= g.W; iw += 8, j += 4) {
      f32x4 e, o;
      Deinterleave<f32x4>::run(vload<f32x4>(s + iw), vload<f32x4>(s + iw + 4), e, o);
      vstore<f32x4>(even + j, e);
      vstore<f32x4>(odd + j, o);
    }
    for (; iw < g.W; ++iw) {
      const int64_t c = iw + g.pw;
      row[(c & 1) * phase + c / 2] = s[iw];
    }
  }
}

// Bias plus every tap, for N consecutive vectors of outputs whose tap (0, 0) reads `at` floats into the copy: the
// inner loop of both sweeps below. N independent sums (four keep the multiply-adds from waiting on each other), each
// in the same order: bias, then the taps row by row.
template <class V, int K, int N>
EMBER_ALWAYS_INLINE void tap_sums(const ConvGeometry& g, const PhasedPlane& pp, const float* plane, const float* w,
                                  int64_t at, V bias, V* acc) {
  constexpr int64_t L = Lanes<V>::value;
  const int64_t KH = K ? K : g.KH, KW = K ? K : g.KW;
  EMBER_UNROLL for (int n = 0; n < N; ++n) acc[n] = bias;
  for (int64_t kh = 0; kh < KH; ++kh) {
    for (int64_t kw = 0; kw < KW; ++kw) {
      const float* s = pp.tap(plane, kh, kw) + at;
      const V wv = vsplat<V>(w[kh * KW + kw]);
      EMBER_UNROLL for (int n = 0; n < N; ++n) acc[n] += wv * vload<V>(s + n * L);
    }
  }
}

template <class V, int K>
EMBER_ALWAYS_INLINE void depthwise_general_rows(const ConvGeometry& g, const PhasedPlane& pp, const float* plane,
                                                const float* w, float bias, float lo, float hi, float* o) {
  constexpr int64_t L = Lanes<V>::value;
  const int64_t OW = g.OW;
  const V vlo = vsplat<V>(lo), vhi = vsplat<V>(hi), vb = vsplat<V>(bias);
  auto finish = [&](V acc) {
    acc = acc < vlo ? vlo : acc;
    return acc > vhi ? vhi : acc;
  };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    // Output (oh, ow) reads each tap's plane at oh * sh * cols + ow.
    const int64_t r = oh * g.sh * pp.cols;
    float* orow = o + oh * OW;
    int64_t ow = 0;
    for (; ow + 4 * L <= OW; ow += 4 * L) {
      V a[4];
      tap_sums<V, K, 4>(g, pp, plane, w, r + ow, vb, a);
      EMBER_UNROLL for (int n = 0; n < 4; ++n) vstore<V>(orow + ow + n * L, finish(a[n]));
    }
    for (; ow < OW; ow += L) {
      // The last vector of a row: overlapping the previous one when the row holds a whole vector.
      const int64_t at = ow + L <= OW ? ow : OW >= L ? OW - L : ow;
      V acc;
      tap_sums<V, K, 1>(g, pp, plane, w, r + at, vb, &acc);
      acc = finish(acc);
      if (at + L <= OW) {
        vstore<V>(orow + at, acc);
      } else {
        float tmp[L];
        vstore<V>(tmp, acc);
        for (int64_t i = at; i < OW; ++i) orow[i] = tmp[i - at];
      }
    }
  }
}

// Small planes (MobileNetV3's and EfficientNet's 14x14 and 7x7, 5x5 taps): the rows one vector or less wide leave
// each vector a chain of KH x KW dependent multiply-adds, and the row-by-row sweep's partial last vector goes out
// through a local copy. Swept instead as one long row of stride cols (the columns between output rows computed and
// dropped; at stride 2 the copy's row phases make an output row's taps one copy row apart, where without them every
// other row would be computed for nothing), four vectors at a time: independent sums, whole-vector stores into
// `flat`, then each output row clamped out of it. EfficientNet-B0 (AVX-512, one thread): its 7x7 5x5 layers
// 190 -> 138 us each, its 14x14 ones 200 -> 159 us.
template <class V, int K>
EMBER_ALWAYS_INLINE void depthwise_general_flat_sweep(const ConvGeometry& g, const PhasedPlane& pp, const float* plane,
                                                      const float* w, float bias, float lo, float hi, float* flat,
                                                      float* o) {
  constexpr int64_t L = Lanes<V>::value;
  // Output (oh, ow) reads tap (kh, kw)'s plane at oh * cols + ow: the copy has a row phase per vertical step.
  const int64_t step = pp.cols, n = (g.OH - 1) * step + g.OW;
  const V vb = vsplat<V>(bias);
  int64_t q = 0;
  for (; q + 4 * L <= n; q += 4 * L) {
    V a[4];
    tap_sums<V, K, 4>(g, pp, plane, w, q, vb, a);
    EMBER_UNROLL for (int k = 0; k < 4; ++k) vstore<V>(flat + q + k * L, a[k]);
  }
  // The last one to three vectors (whole ones: their taps read at most a vector past the copy, into its slack).
  for (; q < n; q += L) {
    V acc;
    tap_sums<V, K, 1>(g, pp, plane, w, q, vb, &acc);
    vstore<V>(flat + q, acc);
  }
  for (int64_t oh = 0; oh < g.OH; ++oh) clamp_row<V>(o + oh * g.OW, flat + oh * step, g.OW, lo, hi);
}

template <class V>
EMBER_ALWAYS_INLINE void depthwise_general(const ConvGeometry& g, const float* x, const float* w, float bias, float lo,
                                           float hi, float* plane, float* flat, float* o) {
  const PhasedPlane pp = phased_plane(g);
  fill_phased<V>(g, pp, x, plane);
  if (flat != nullptr) {
    if (g.KH == 3 && g.KW == 3) return depthwise_general_flat_sweep<V, 3>(g, pp, plane, w, bias, lo, hi, flat, o);
    if (g.KH == 5 && g.KW == 5) return depthwise_general_flat_sweep<V, 5>(g, pp, plane, w, bias, lo, hi, flat, o);
    return depthwise_general_flat_sweep<V, 0>(g, pp, plane, w, bias, lo, hi, flat, o);
  }
  if (g.KH == 3 && g.KW == 3) return depthwise_general_rows<V, 3>(g, pp, plane, w, bias, lo, hi, o);
  if (g.KH == 5 && g.KW == 5) return depthwise_general_rows<V, 5>(g, pp, plane, w, bias, lo, hi, o);
  depthwise_general_rows<V, 0>(g, pp, plane, w, bias, lo, hi, o);
}

// Floats of scratch depthwise3x3_padded needs: the bordered plane, then OH x (W + 2pw) for its unit-stride sweep,
// each with slack.
int64_t depthwise3x3_scratch_floats(const ConvGeometry& g) {
  const int64_t wp = g.W + 2 * g.pw;
  return (g.H + 2 * g.ph) * wp + kSlackFloats + g.OH * wp + kSlackFloats;
}

// Which sweep a depthwise convolution takes, given scratch: the 3x3 one at unit horizontal stride (and for 3x3
// with dilation), the general one for other kernels and stride 2, else the bounds-checked taps.
enum class DepthwisePath { Padded3x3, General, Plane };

DepthwisePath depthwise_path(const ConvGeometry& g) {
  const bool k3 = g.KH == 3 && g.KW == 3;
  if (k3 && g.sw == 1) return DepthwisePath::Padded3x3;
  if (depthwise_general_ok(g)) return DepthwisePath::General;
  return k3 ? DepthwisePath::Padded3x3 : DepthwisePath::Plane;
}

int64_t depthwise_scratch_floats(const ConvGeometry& g) {
  switch (depthwise_path(g)) {
    case DepthwisePath::Padded3x3: return depthwise3x3_scratch_floats(g);
    case DepthwisePath::General: return depthwise_general_scratch_floats(g);
    default: return 0;
  }
}

// One thread's slice of depthwise scratch: the path's floats, rounded up to whole 16-byte lines so the next
// thread's slice starts aligned. 0 when the path needs none.
size_t depthwise_slice_bytes(const ConvGeometry& g) {
  return round16(static_cast<size_t>(depthwise_scratch_floats(g)) * sizeof(float));
}

// Output channels [c0, c1) of every image, counted image-major (c = n * Cout + co). padded: one slice of scratch
// for the path depthwise_path() names (null when it needs none, or none was available).
template <class V>
EMBER_ALWAYS_INLINE void depthwise(const ConvGeometry& g, const float* x, const float* w, const float* b, float lo,
                                   float hi, bool silu, float* padded, int64_t c0, int64_t c1, float* o) {
  const int64_t mult = g.Cout / g.groups;  // output channels per input channel
  const int64_t plane = g.H * g.W, oplane = g.OH * g.OW;
  const DepthwisePath path = padded != nullptr ? depthwise_path(g) : DepthwisePath::Plane;
  const int64_t padded_floats =
      path == DepthwisePath::General ? depthwise_phased_floats(g) : (g.H + 2 * g.ph) * (g.W + 2 * g.pw) + kSlackFloats;
  // Zero once: the border and the slack; only the interior is overwritten per channel.
  if (padded != nullptr) memset(padded, 0, padded_floats * sizeof(float));
  float* flat = padded != nullptr ? padded + padded_floats : nullptr;
  for (int64_t c = c0; c < c1; ++c) {
    const int64_t n = c / g.Cout, co = c % g.Cout;
    const float* xc = x + (n * g.Cin + co / mult) * plane;
    const float* wc = w + co * g.KH * g.KW;
    float* oc = o + c * oplane;
    if (path == DepthwisePath::General) {
      depthwise_general<V>(g, xc, wc, b ? b[co] : 0.0f, lo, hi, padded, depthwise_general_flat(g) ? flat : nullptr, oc);
    } else if (path == DepthwisePath::Padded3x3) {
      depthwise3x3_padded<V>(g, xc, wc, b ? b[co] : 0.0f, lo, hi, padded, flat, oc);
    } else {
      depthwise_plane(g, xc, wc, b ? b[co] : 0.0f, lo, hi, oc);
    }
    if (silu) silu_block(oc, oplane, 1, oplane);  // the plane just written: in L1 or L2 (112 x 112 is 49 KB)
  }
}

void depthwise_baseline(const ConvGeometry& g, const float* x, const float* w, const float* b, float lo, float hi,
                        bool silu, float* padded, int64_t c0, int64_t c1, float* o) {
  depthwise<f32x4>(g, x, w, b, lo, hi, silu, padded, c0, c1, o);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void depthwise_avx2(const ConvGeometry& g, const float* x, const float* w, const float* b, float lo,
                                      float hi, bool silu, float* padded, int64_t c0, int64_t c1, float* o) {
  depthwise<f32x8>(g, x, w, b, lo, hi, silu, padded, c0, c1, o);
}
EMBER_TARGET_AVX512 void depthwise_avx512(const ConvGeometry& g, const float* x, const float* w, const float* b,
                                          float lo, float hi, bool silu, float* padded, int64_t c0, int64_t c1,
                                          float* o) {
  depthwise<f32x16>(g, x, w, b, lo, hi, silu, padded, c0, c1, o);
}
#endif

// The channels split into one part per thread, each part on a scratch slice of its own (channels cost the same,
// so equal parts keep every thread busy). Scratch planned for fewer threads than the pool has: fewer parts; for
// none (a kernel test calling it directly), the bounds-checked path on every thread, which needs no scratch.
void depthwise_split(KernelContext& ctx, const ConvGeometry& g, const float* x, const float* w, const float* b,
                     float lo, float hi, bool silu, float* o) {
  const size_t slice = depthwise_slice_bytes(g);
  const int64_t threads = ctx.threads() != nullptr ? ctx.threads()->threads() : 1;
  const int64_t slices = slice > 0 ? ctx.scratch_slices(slice) : 0;
  const bool padded = slices > 0;
  const int64_t channels = g.N * g.Cout;
  int64_t parts = padded ? slices : threads;
  if (parts > channels) parts = channels;
  uint8_t* scratch = ctx.scratch().data();
  auto run = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* mine = padded ? reinterpret_cast<float*>(scratch + p * slice) : nullptr;
      const int64_t c0 = channels * p / parts, c1 = channels * (p + 1) / parts;
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx512f()) {
        depthwise_avx512(g, x, w, b, lo, hi, silu, mine, c0, c1, o);
        continue;
      }
      if (cpu_has_avx2_fma()) {
        depthwise_avx2(g, x, w, b, lo, hi, silu, mine, c0, c1, o);
        continue;
      }
#endif
      depthwise_baseline(g, x, w, b, lo, hi, silu, mine, c0, c1, o);
    }
  };
  parallel_for(ctx.threads(), parts, 1, run);
}

// The im2col matrix of one image and group (rows: ci, kh, kw; columns: output positions from p0 on), written
// panel by panel for sgemm_packed. A panel's columns are one to a few runs along output rows; per run and tap, the
// positions whose tap falls in the padding are zeros and the rest a copy, so no element needs a bounds check.
struct Im2col {
  const ConvGeometry* g;
  const float* x;  // the group's first input plane
  int64_t p0;      // output position of the call's column 0
};

// Every other float: d[t] = s[2t] for t < n. Pairs of vectors deinterleaved while the second one's last float,
// s[2t + 2L - 1], is still one the run needs a neighbour of (so never past the input's end); the rest one by one.
template <class V>
EMBER_ALWAYS_INLINE void copy_run_s2(float* d, const float* s, int64_t n) {
  constexpr int64_t L = Lanes<V>::value;
  int64_t t = 0;
  for (; t + L < n; t += L) {
    V even, odd;
    Deinterleave<V>::run(vload<V>(s + 2 * t), vload<V>(s + 2 * t + L), even, odd);
    vstore<V>(d + t, even);
  }
  for (; t < n; ++t) d[t] = s[2 * t];
}

template <class V>
EMBER_ALWAYS_INLINE void zero_run(float* d, int64_t n) {
  constexpr int64_t L = Lanes<V>::value;
  int64_t i = 0;
  for (; i + L <= n; i += L) vstore<V>(d + i, V{});
  for (; i < n; ++i) d[i] = 0.0f;
}

template <class V>
EMBER_ALWAYS_INLINE void im2col_panel(const Im2col& f, int64_t k0, int64_t kc, int64_t n0, int64_t n, int64_t width,
                                      float* dst) {
  const ConvGeometry& g = *f.g;
  const int64_t OW = g.OW, W = g.W, sw = g.sw, plane = g.H * g.W, taps = g.KH * g.KW;
  // The runs of this panel: output row, first column, and where they land in the panel row (n <= kPanelMaxWidth).
  struct Run {
    int64_t j, len, ih, iw;  // ih, iw: the input position of tap (0, 0) for the run's first output
  } runs[kPanelMaxWidth];
  int64_t nruns = 0;
  for (int64_t j = 0, p = f.p0 + n0; j < n; ++nruns) {
    const int64_t oh = p / OW, ow = p % OW;
    const int64_t len = OW - ow < n - j ? OW - ow : n - j;
    runs[nruns] = {j, len, oh * g.sh - g.ph, ow * sw - g.pw};
    j += len, p += len;
  }
  // Rows are written tap by tap, not in order: whether a run's tap reads padding, input, or both depends on the
  // tap alone, so it is decided once per tap and run, and the loop over channels (rows taps apart, input planes
  // apart) is then a plain copy. In row order, that decision per row and run cost more than the copying.
  const int64_t stride = taps * width;
  for (int64_t t = 0; t < taps; ++t) {
    // Rows k = ci * taps + t inside [k0, k0 + kc).
    if (k0 + kc - 1 < t) break;
    const int64_t ci0 = k0 > t ? (k0 - t + taps - 1) / taps : 0, ci1 = (k0 + kc - 1 - t) / taps + 1;
    if (ci0 >= ci1) continue;
    const int64_t count = ci1 - ci0;
    float* row0 = dst + (ci0 * taps + t - k0) * width;
    const float* x0 = f.x + ci0 * plane;
    const int64_t dh = t / g.KW * g.dh, dw = t % g.KW * g.dw;
    for (int64_t r = 0; r < nruns; ++r) {
      const Run& run = runs[r];
      float* d = row0 + run.j;
      const int64_t ih = run.ih + dh, iw = run.iw + dw, len = run.len;
      if (ih < 0 || ih >= g.H) {
        for (int64_t c = 0; c < count; ++c, d += stride) zero_run<V>(d, len);
        continue;
      }
      const float* src = x0 + ih * W + iw;
      // Output u of the run reads input column iw + u * sw: inside the row for u in [a, b). Most runs are wholly
      // inside (a 3x3 layer's padding touches one output at each end of a row), and are one copy per channel.
      if (sw == 1 && iw >= 0 && iw + len <= W) {
        for (int64_t c = 0; c < count; ++c, d += stride, src += plane) copy_row<V>(d, src, len);
        continue;
      }
      int64_t a = iw >= 0 ? 0 : (-iw + sw - 1) / sw;
      int64_t b = iw > W - 1 ? 0 : (W - 1 - iw) / sw + 1;
      if (b > len) b = len;
      if (a > b) a = b;
      for (int64_t c = 0; c < count; ++c, d += stride, src += plane) {
        zero_run<V>(d, a);
        if (sw == 1) {
          copy_row<V>(d + a, src + a, b - a);
        } else if (sw == 2) {
          copy_run_s2<V>(d + a, src + 2 * a, b - a);
        } else {
          for (int64_t u = a; u < b; ++u) d[u] = src[u * sw];
        }
        zero_run<V>(d + b, len - b);
      }
    }
  }
  if (n < width) {
    for (int64_t k = 0; k < kc; ++k) zero_run<V>(dst + k * width + n, width - n);
  }
}

void im2col_fill_baseline(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t n, int64_t width, float* dst) {
  im2col_panel<f32x4>(*static_cast<const Im2col*>(ctx), k0, kc, n0, n, width, dst);
}
#if EMBER_SIMD_X86_DISPATCH
EMBER_TARGET_AVX2 void im2col_fill_avx2(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t n, int64_t width,
                                        float* dst) {
  im2col_panel<f32x8>(*static_cast<const Im2col*>(ctx), k0, kc, n0, n, width, dst);
}
#endif

// Plain loops for one image and group, for when not even one im2col column fits in scratch.
void direct(const ConvGeometry& g, const float* x, const float* w, const float* b, int64_t cout_g, float lo, float hi,
            float* o) {
  for (int64_t co = 0; co < cout_g; ++co) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        float acc = b ? b[co] : 0.0f;
        for (int64_t ci = 0; ci < g.Cg; ++ci) {
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
              if (iw >= 0 && iw < g.W) {
                acc += x[(ci * g.H + ih) * g.W + iw] * w[((co * g.Cg + ci) * g.KH + kh) * g.KW + kw];
              }
            }
          }
        }
        o[(co * g.OH + oh) * g.OW + ow] = clamp(acc, lo, hi);
      }
    }
  }
}

// A block of C that SiLU takes from L2 right after the GEMM wrote it: 256 KB, half this machine class's L2.
constexpr int64_t kSiluBlockFloats = 64 * 1024;

// Pointwise: the input planes are already the GEMM's B matrix. With SiLU, the GEMM runs in column chunks whose C
// block fits kSiluBlockFloats (multiples of 48 columns, whole tiles at every vector width), each activated as soon
// as it is written; a chunk changes no element's sum, so the results are the unchunked GEMM's.
void conv_pointwise(const ConvGeometry& g, const float* x, const float* w, const float* b, float lo, float hi,
                    bool silu, ThreadPool* pool, float* o) {
  const int64_t ohw = g.OH * g.OW, cout_g = g.Cout / g.groups;
  int64_t chunk = ohw;
  if (silu && cout_g > 0) {
    chunk = kSiluBlockFloats / cout_g / 48 * 48;
    if (chunk < 48) chunk = 48;
  }
  Gemm gm;
  gm.M = cout_g, gm.K = g.Cg, gm.lda = g.Cg, gm.ldb = ohw, gm.ldc = ohw;
  gm.lo = lo, gm.hi = hi;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      gm.a = w + grp * cout_g * g.Cg;
      gm.row_bias = b ? b + grp * cout_g : nullptr;
      const float* bg = x + (n * g.Cin + grp * g.Cg) * ohw;
      float* cg = o + (n * g.Cout + grp * cout_g) * ohw;
      for (int64_t n0 = 0; n0 < ohw; n0 += chunk) {
        gm.N = ohw - n0 < chunk ? ohw - n0 : chunk;
        gm.b = bg + n0, gm.c = cg + n0;
        sgemm(gm, pool);
        if (silu) silu_block(gm.c, ohw, cout_g, gm.N);
      }
    }
  }
}

// Columns per sgemm_packed call: all of them up to kPackedMaxN, else as few equal calls as cover them, each
// rounded up to whole tiles (48 columns: two AVX2 tiles, three NEON, six SSE).
int64_t im2col_columns(const ConvGeometry& g) {
  const int64_t ohw = g.OH * g.OW;
  if (ohw <= kPackedMaxN) return ohw;
  const int64_t calls = (ohw + kPackedMaxN - 1) / kPackedMaxN;
  const int64_t per = ((ohw + calls - 1) / calls + 47) / 48 * 48;
  return per < kPackedMaxN ? per : kPackedMaxN;
}

bool is_depthwise(const ConvGeometry& g) { return g.Cg == 1 && g.groups == g.Cin && g.groups > 1; }
bool is_pointwise(const ConvGeometry& g) {
  return g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// Scratch bytes the path convolve() takes for this geometry uses.
size_t scratch_bytes(const ConvGeometry& g) {
  if (is_depthwise(g)) return depthwise_slice_bytes(g);
  if (is_pointwise(g)) return 0;
  const int64_t kdim = g.Cg * g.KH * g.KW;
  if (kdim == 0) return 0;  // no taps (an empty weight): direct loops write the bias
  return static_cast<size_t>(sgemm_packed_scratch_floats(kdim, im2col_columns(g))) * sizeof(float);
}

// The memory of either convolution overload: arguments 0-8 are the same, out is the last.
KernelMemory memory(const KernelArgs& a, uint32_t float_mask) {
  const size_t out = a.size() - 1;
  if (a.dtype(out) != ScalarType::Float || !(float_mask & dtype_bit(ScalarType::Float))) return {};  // portable's
  int64_t lists[3][4];
  ArrayRef<int64_t> refs[3];
  for (size_t l = 0; l < 3; ++l) {
    const size_t n = a.list_size(3 + l);
    if (n > 4) return {};
    for (size_t k = 0; k < n; ++k) lists[l][k] = a.list_item(3 + l, k);
    refs[l] = ArrayRef<int64_t>(lists[l], n);
  }
  ConvGeometry g;
  if (!portable::conv_geometry(a.sizes(0), a.sizes(1), refs[0], refs[1], refs[2], a.to_bool(6), a.to_int(8), g)) {
    return {};  // the kernel refuses the call, naming why
  }
  KernelMemory m;
  m.scratch = scratch_bytes(g);
  if (is_depthwise(g)) m.scratch_per_thread = m.scratch;  // a slice per thread (depthwise_split)
  return m;
}

void conv_im2col(KernelContext& ctx, const ConvGeometry& g, const float* x, const float* w, const float* b, float lo,
                 float hi, bool silu, float* o) {
  const int64_t kdim = g.Cg * g.KH * g.KW, ohw = g.OH * g.OW, cout_g = g.Cout / g.groups;
  const int64_t nt = im2col_columns(g);
  float* scratch = reinterpret_cast<float*>(ctx.scratch().data());
  const bool packed = kdim > 0 && ctx.scratch().size() >= scratch_bytes(g);
  Gemm gm;
  gm.M = cout_g, gm.K = kdim, gm.lda = kdim, gm.ldc = ohw;
  gm.lo = lo, gm.hi = hi;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* xg = x + (n * g.Cin + grp * g.Cg) * g.H * g.W;
      const float* wg = w + grp * cout_g * kdim;
      const float* bg = b ? b + grp * cout_g : nullptr;
      float* og = o + (n * g.Cout + grp * cout_g) * ohw;
      if (!packed) {
        direct(g, xg, wg, bg, cout_g, lo, hi, og);
        if (silu) silu_block(og, ohw, cout_g, ohw);
        continue;
      }
      gm.a = wg, gm.row_bias = bg;
      Im2col f{&g, xg, 0};
      PackedB pb{&im2col_fill_baseline, &f};
#if EMBER_SIMD_X86_DISPATCH
      if (cpu_has_avx2_fma()) pb.fill = &im2col_fill_avx2;
#endif
      for (int64_t p0 = 0; p0 < ohw; p0 += nt) {
        f.p0 = p0;
        gm.N = ohw - p0 < nt ? ohw - p0 : nt;
        gm.c = og + p0;
        sgemm_packed(gm, pb, scratch, ctx.threads());
        if (silu) silu_block(gm.c, ohw, cout_g, gm.N);  // the call's columns, M x <= 192 floats, still in L2
      }
    }
  }
}

// The Float convolution, every output clamped to [lo, hi] where it is written (infinite bounds: no clamp), then
// through SiLU if `silu`.
void convolve(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
              ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
              int64_t groups, float lo, float hi, bool silu, Tensor& out) {
  ConvGeometry g;
  if (!portable::check_convolution(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, out, g)) {
    return;
  }
  const float* x = input.const_data_ptr<float>();
  const float* w = weight.const_data_ptr<float>();
  const float* b = bias ? bias->const_data_ptr<float>() : nullptr;
  float* o = out.mutable_data_ptr<float>();
  if (is_depthwise(g)) return depthwise_split(ctx, g, x, w, b, lo, hi, silu, o);
  if (is_pointwise(g)) {
    return conv_pointwise(g, x, w, b, lo, hi, silu, ctx.threads(), o);
  }
  conv_im2col(ctx, g, x, w, b, lo, hi, silu, o);
}

// The layout these paths take; channels-last (and any other dim order) goes to portable, which reads strides.
bool contiguous(const Tensor& input, const Tensor& weight, const Tensor& out) {
  return input.is_contiguous() && weight.is_contiguous() && out.is_contiguous();
}

}  // namespace

KernelMemory convolution_memory(const KernelArgs& args) {
  return memory(args, selected_dtypes::convolution_out_optimized);
}

KernelMemory convolution_clamp_memory(const KernelArgs& args) {
  return memory(args, selected_dtypes::convolution_clamp_out_optimized);
}

KernelMemory convolution_silu_memory(const KernelArgs& args) {
  return memory(args, selected_dtypes::convolution_silu_out_optimized);
}

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  if (!computes_float(selected_dtypes::convolution_out_optimized, out) || !contiguous(input, weight, out)) {
    return portable::convolution_out(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                     groups, out);
  }
  convolve(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, -__builtin_inff(), __builtin_inff(),
           false, out);
}

void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out) {
  if (!computes_float(selected_dtypes::convolution_clamp_out_optimized, out) || !contiguous(input, weight, out)) {
    return portable::convolution_clamp_out(ctx, input, weight, bias, stride, padding, dilation, transposed,
                                           output_padding, groups, min, max, out);
  }
  // exir never fuses a NaN bound (torch.clamp would make every element NaN, not compare-and-select).
  EMBER_KERNEL_CHECK(ctx, min == min && max == max, InvalidArgument,
                     "convolution_clamp.out: bounds [%g, %g] include NaN", min, max);
  convolve(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, static_cast<float>(min),
           static_cast<float>(max), false, out);
}

void convolution_silu_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  if (!computes_float(selected_dtypes::convolution_silu_out_optimized, out) || !contiguous(input, weight, out)) {
    return portable::convolution_silu_out(ctx, input, weight, bias, stride, padding, dilation, transposed,
                                          output_padding, groups, out);
  }
  convolve(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, -__builtin_inff(), __builtin_inff(),
           true, out);
}

}  // namespace optimized
}  // namespace ember
