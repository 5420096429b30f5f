#include "kernels/optimized/int8/panel.h"

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

// Where pixel p's four bytes of group q go.
inline uint8_t* slot(uint8_t* panel, const Int8ConvPlan& plan, int32_t q, int32_t p) {
  const int32_t lanes = plan.tile.lanes;
  return panel + (static_cast<size_t>(p / lanes) * plan.k_groups + q) * lanes * 4 + (p % lanes) * 4;
}

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
void put_16(uint8_t* panel, const Int8ConvPlan& plan, Form form, const int8_t* const* r, int32_t q, int32_t p) {
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
  for (int c = 0; c < 4; ++c) _mm_storeu_si128(reinterpret_cast<__m128i*>(slot(panel, plan, q, p + 4 * c)), chunk[c]);
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
  for (int c = 0; c < 4; ++c) memcpy(slot(panel, plan, q, p + 4 * c), tmp + 16 * c, 16);
#else
  for (int32_t i = 0; i < 16; ++i) put_pixel(slot(panel, plan, q, p + i), form, r, plan.tile.group, p + i, true, 0);
#endif
}

}  // namespace

void gather_panel(const Int8ConvShape& s, const Int8ConvPlan& plan, const int8_t* xg, int32_t zero_point, int32_t p0,
                  int32_t pixels, uint8_t* panel, int8_t* rows) {
  const Form form = form_of(plan);
  const int32_t group = plan.tile.group;
  const int32_t padded = plan.panel_vectors * plan.tile.lanes;
  const int8_t zp = static_cast<int8_t>(zero_point);
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
  const int32_t vectors = (pixels + plan.tile.lanes - 1) / plan.tile.lanes;
  const int32_t whole = pixels & ~15;
  for (int32_t q = 0; q < plan.k_groups; ++q) {
    const int8_t* r[4];
    for (int32_t t = 0; t < group; ++t) {
      const int32_t k = q * group + t;
      int8_t* own = rows + static_cast<size_t>(t) * padded;
      if (k >= plan.taps) {
        // Past the reduction: the packed weights are zero there, any value serves.
        memset(own, zp, static_cast<size_t>(pixels));
        r[t] = own;
      } else if (pointwise) {
        r[t] = xg + static_cast<size_t>(k) * s.H * s.W + p0;
      } else {
        im2col_row(s, xg, k, p0, pixels, zp, own);
        r[t] = own;
      }
    }
    for (int32_t p = 0; p < whole; p += 16) put_16(panel, plan, form, r, q, p);
    for (int32_t p = whole; p < vectors * plan.tile.lanes; ++p) {
      put_pixel(slot(panel, plan, q, p), form, r, group, p, p < pixels, zp);
    }
  }
}

}  // namespace optimized
}  // namespace ember
