#include "kernels/optimized/int8/panel.h"

#include "kernels/optimized/int8/tier_kernels.h"

#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#elif defined(__aarch64__) && !defined(__APPLE__)
#include <arm_neon.h>
#endif

namespace ember {
namespace optimized {
namespace {

// How a tier's panel and plane store an int8 value.
enum class Form { kOffsetBytes, kInt16, kBytes };

Form form_of(const Int8ConvPlan& plan) {
  if (plan.tile.offset == 128) return Form::kOffsetBytes;
  return plan.tile.group == 2 ? Form::kInt16 : Form::kBytes;
}

// Output columns [lo, hi) of a run whose input column ow * sw + offset lies in [0, W).
void valid_columns(int32_t offset, int32_t sw, int32_t W, int32_t* lo, int32_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + sw - 1) / sw;
  *hi = W - 1 - offset < 0 ? 0 : (W - 1 - offset) / sw + 1;
}

// Row k of the im2col matrix (tap (ci, kh, kw)) over pixels [p0, p0 + n): the input it reads, or the zero point.
void im2col_row(const Int8ConvShape& s, const int8_t* xg, int32_t k, int32_t p0, int32_t n, int8_t zp, int8_t* row) {
  const int32_t kw = k % s.KW, kh = (k / s.KW) % s.KH, ci = k / (s.KW * s.KH);
  const int8_t* xc = xg + static_cast<size_t>(ci) * s.H * s.W;
  const int32_t offset = kw * s.dw - s.pw;
  int32_t first, last;
  valid_columns(offset, s.sw, s.W, &first, &last);
  int32_t oh = p0 / s.OW, ow = p0 % s.OW;
  for (int32_t i = 0; i < n;) {
    const int32_t run = s.OW - ow < n - i ? s.OW - ow : n - i;
    const int32_t ih = oh * s.sh - s.ph + kh * s.dh;
    int8_t* r = row + i;
    if (ih < 0 || ih >= s.H) {
      memset(r, zp, static_cast<size_t>(run));
    } else {
      const int8_t* xr = xc + static_cast<size_t>(ih) * s.W;
      const int32_t end = ow + run;
      const int32_t lo = first > ow ? (first < end ? first : end) : ow;
      const int32_t hi = last < end ? (last > lo ? last : lo) : end;
      memset(r, zp, static_cast<size_t>(lo - ow));
      if (s.sw == 1) {
        memcpy(r + (lo - ow), xr + lo + offset, static_cast<size_t>(hi - lo));
      } else {
        const int8_t* src = xr + static_cast<ptrdiff_t>(lo) * s.sw + offset;
        int8_t* dst = r + (lo - ow);
        for (int32_t c = 0; c < hi - lo; ++c) dst[c] = src[static_cast<ptrdiff_t>(c) * s.sw];
      }
      memset(r + (hi - ow), zp, static_cast<size_t>(end - hi));
    }
    i += run;
    ow = 0;
    ++oh;
  }
}

// Where pixel p's four bytes of group q go. Lanes are a power of two: shifts, not divisions, in this hot loop.
struct Slots {
  uint8_t* panel;
  size_t k_groups;
  int32_t lane_shift, lane_mask;
  uint8_t* at(int32_t q, int32_t p) const {
    return panel + (((static_cast<size_t>(p) >> lane_shift) * k_groups + q) << (lane_shift + 2)) +
           ((p & lane_mask) << 2);
  }
};

// One pixel's group from the rows (the zero point past `pixels`, where the rows hold nothing).
void put_pixel(uint8_t* dst, Form form, const int8_t* const* r, int32_t group, int32_t p, bool valid, int8_t zp) {
  for (int32_t t = 0; t < group; ++t) {
    const int8_t v = valid ? r[t][p] : zp;
    if (form == Form::kInt16) {
      const int16_t w = v;
      memcpy(dst + 2 * t, &w, 2);
    } else {
      dst[t] = static_cast<uint8_t>(form == Form::kOffsetBytes ? v ^ 0x80 : v);
    }
  }
}

// Sixteen pixels of the group's rows at once into four 16-byte chunks of four pixels each.
void put_16(const Slots& slot, Form form, const int8_t* const* r, int32_t q, int32_t p) {
#if defined(__x86_64__)
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + p));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + p));
  __m128i chunk[4];
  if (form == Form::kInt16) {
    // Sign-extended by unpacking each byte into the high half of a word, then an arithmetic shift.
    const __m128i a_lo = _mm_srai_epi16(_mm_unpacklo_epi8(a, a), 8), a_hi = _mm_srai_epi16(_mm_unpackhi_epi8(a, a), 8);
    const __m128i b_lo = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8), b_hi = _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8);
    chunk[0] = _mm_unpacklo_epi16(a_lo, b_lo);
    chunk[1] = _mm_unpackhi_epi16(a_lo, b_lo);
    chunk[2] = _mm_unpacklo_epi16(a_hi, b_hi);
    chunk[3] = _mm_unpackhi_epi16(a_hi, b_hi);
  } else {
    const __m128i flip = _mm_set1_epi8(form == Form::kOffsetBytes ? static_cast<char>(0x80) : 0);
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + p));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + p));
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    chunk[0] = _mm_xor_si128(_mm_unpacklo_epi16(ab_lo, cd_lo), flip);
    chunk[1] = _mm_xor_si128(_mm_unpackhi_epi16(ab_lo, cd_lo), flip);
    chunk[2] = _mm_xor_si128(_mm_unpacklo_epi16(ab_hi, cd_hi), flip);
    chunk[3] = _mm_xor_si128(_mm_unpackhi_epi16(ab_hi, cd_hi), flip);
  }
  for (int c = 0; c < 4; ++c) _mm_storeu_si128(reinterpret_cast<__m128i*>(slot.at(q, p + 4 * c)), chunk[c]);
#elif defined(__aarch64__) && !defined(__APPLE__)
  (void)form;
  int8x16x4_t v;
  v.val[0] = vld1q_s8(r[0] + p);
  v.val[1] = vld1q_s8(r[1] + p);
  v.val[2] = vld1q_s8(r[2] + p);
  v.val[3] = vld1q_s8(r[3] + p);
  // VST4 interleaves the four rows byte by byte: pixel after pixel, four bytes each; four 4-pixel vectors.
  alignas(16) int8_t tmp[64];
  vst4q_s8(tmp, v);
  for (int c = 0; c < 4; ++c) memcpy(slot.at(q, p + 4 * c), tmp + 16 * c, 16);
#else
  const int32_t group = form == Form::kInt16 ? 2 : 4;
  for (int32_t i = 0; i < 16; ++i) put_pixel(slot.at(q, p + i), form, r, group, p + i, true, 0);
#endif
}

}  // namespace

void gather_panel(const Int8ConvShape& s, const Int8ConvPlan& plan, const int8_t* xg, int32_t zero_point, int32_t p0,
                  int32_t pixels, uint8_t* panel, int8_t* rows) {
  const Form form = form_of(plan);
  const int32_t group = plan.tile.group;
  const int32_t padded = plan.panel_vectors * plan.tile.lanes;
  const int8_t zp = static_cast<int8_t>(zero_point);
  const size_t plane = static_cast<size_t>(s.H) * s.W;
  const size_t phase = static_cast<size_t>(plan.plane_rows) * plan.plane_cols;
  const int32_t vectors = (pixels + plan.tile.lanes - 1) / plan.tile.lanes;
  const int32_t whole = pixels & ~15;
  int32_t lane_shift = 0;
  while ((1 << lane_shift) < plan.tile.lanes) ++lane_shift;
  const Slots slot{panel, static_cast<size_t>(plan.k_groups), lane_shift, plan.tile.lanes - 1};
  const TierKernels* tier = tier_kernels(plan.level);
  const auto pack = tier != nullptr ? tier->pack : nullptr;
  // Tap k is (ci, kh, kw), counted along rather than divided out: a deep layer has thousands of taps per panel.
  int32_t ci = 0, kh = 0, kw = 0;
  const bool unit = s.sh == 1 && s.sw == 1;
  for (int32_t q = 0; q < plan.k_groups; ++q) {
    const int8_t* r[4];
    for (int32_t t = 0; t < group; ++t) {
      const int32_t k = q * group + t;
      int8_t* own = rows + static_cast<size_t>(t) * padded;
      if (k >= plan.taps) {
        // Past the reduction: the packed weights are zero there, any value serves.
        memset(own, zp, static_cast<size_t>(pixels));
        r[t] = own;
      } else if (plan.source == GemmSource::kInPlace) {
        r[t] = xg + static_cast<size_t>(k) * plane + p0;
      } else if (plan.source == GemmSource::kFlat) {
        // Tap (kh, kw) reads bordered row oh * s + kh * dh: phase row (kh * dh) % s, oh + (kh * dh) / s within it.
        const int32_t y = kh * s.dh, x = kw * s.dw;
        if (unit) {
          r[t] = xg + ci * phase + static_cast<size_t>(y) * plan.plane_cols + x + p0;
        } else {
          const size_t which = (static_cast<size_t>(ci) * s.sh + y % s.sh) * s.sw + x % s.sw;
          r[t] = xg + which * phase + static_cast<size_t>(y / s.sh) * plan.plane_cols + x / s.sw + p0;
        }
      } else {
        im2col_row(s, xg, k, p0, pixels, zp, own);
        r[t] = own;
      }
      if (++kw == s.KW) {
        kw = 0;
        if (++kh == s.KH) kh = 0, ++ci;
      }
    }
    if (pack != nullptr) {
      pack(r, pixels, vectors, zero_point, panel + static_cast<size_t>(q) * plan.tile.lanes * 4,
           static_cast<size_t>(plan.k_groups) * plan.tile.lanes * 4);
      continue;
    }
    for (int32_t p = 0; p < whole; p += 16) put_16(slot, form, r, q, p);
    for (int32_t p = whole; p < vectors * plan.tile.lanes; ++p)
      put_pixel(slot.at(q, p), form, r, group, p, p < pixels, zp);
  }
}

// Every s-th byte of n, from src.
void copy_every(int8_t* dst, const int8_t* src, int32_t n, int32_t s) {
  int32_t i = 0;
#if defined(__x86_64__)
  if (s == 2) {
    const __m128i even = _mm_set1_epi16(0x00FF);
    // 32 bytes read for 16 kept: the last pair's odd byte must still be the row's.
    for (; i + 17 <= n; i += 16) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)), even);
      const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 16)), even);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_packus_epi16(a, b));
    }
  }
#elif defined(__aarch64__) && !defined(__APPLE__)
  if (s == 2) {
    for (; i + 17 <= n; i += 16) vst1q_s8(dst + i, vld2q_s8(src + 2 * i).val[0]);
  }
#endif
  for (; i < n; ++i) dst[i] = src[static_cast<ptrdiff_t>(i) * s];
}

void border_planes(const Int8ConvShape& s, const Int8ConvPlan& plan, const int8_t* xg, int32_t zero_point,
                   int8_t* planes) {
  const int32_t rows = plan.plane_rows, cols = plan.plane_cols, W = s.W, H = s.H, sh = s.sh, sw = s.sw;
  const size_t phase = static_cast<size_t>(rows) * cols;
  if (sh == 1 && sw == 1) {
    // Unit stride: each byte written once, row by row (the border, then the input row).
    const int8_t zp = static_cast<int8_t>(zero_point);
    int8_t* dst = planes;
    for (int32_t c = 0; c < s.Cg; ++c) {
      const int8_t* src = xg + static_cast<size_t>(c) * H * W;
      for (int32_t r = 0; r < rows; ++r, dst += cols) {
        const int32_t h = r - s.ph;
        if (h < 0 || h >= H) {
          memset(dst, zp, static_cast<size_t>(cols));
          continue;
        }
        for (int32_t i = 0; i < s.pw; ++i) dst[i] = zp, dst[s.pw + W + i] = zp;
        memcpy(dst + s.pw, src + static_cast<size_t>(h) * W, static_cast<size_t>(W));
      }
    }
    memset(dst, zp, plan.plane_bytes - static_cast<size_t>(dst - planes));
    return;
  }
  memset(planes, zero_point, plan.plane_bytes);
  for (int32_t c = 0; c < s.Cg; ++c) {
    const int8_t* src = xg + static_cast<size_t>(c) * H * W;
    for (int32_t h = 0; h < H; ++h) {
      // Input row h is bordered row h + ph: phase row a, row i within it.
      const int32_t a = (h + s.ph) % sh, i = (h + s.ph) / sh;
      for (int32_t b = 0; b < sw; ++b) {
        // Bordered column j = w + pw lands in phase column b when j % sw == b: the first such w, then every sw-th.
        const int32_t w0 = ((b - s.pw) % sw + sw) % sw;
        if (w0 >= W) continue;
        const int32_t count = (W - w0 + sw - 1) / sw, j0 = (w0 + s.pw) / sw;
        int8_t* dst =
            planes + ((static_cast<size_t>(c) * sh + a) * sw + b) * phase + static_cast<size_t>(i) * cols + j0;
        copy_every(dst, src + static_cast<size_t>(h) * W + w0, count, sw);
      }
    }
  }
}

}  // namespace optimized
}  // namespace ember
