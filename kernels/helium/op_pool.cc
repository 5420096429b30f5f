// The int8 pools on MVE, NCHW:
//   ember_quantized::adaptive_avg_pool2d.out with a 1x1 output, and ember_quantized::avg_pool2d.out whose one
//     window is the whole plane (the classifier heads of MobileNet, DS-CNN, ResNet): each plane summed 16 bytes per
//     VADDVA, then four planes' centered sums requantized as one vector.
//   ember_quantized::avg_pool2d.out, other windows: sixteen outputs of a row per block (util/pool_rows.h), or of
//     several rows where the plane is narrow, the taps summed in 16-bit lanes (even and odd outputs apart, as the
//     widening moves split them), requantized on 32-bit lanes and narrowed back in order. A row's windows inside
//     the input's columns share one divisor; those meeting the left or right padding go one at a time.
//   max_pool2d_with_indices.out on int8 (op_pool_f32.cc's kernel hands its Char calls here): the same blocks, each
//     tap a 16-bit key of value and tap number whose VMAX keeps the greatest value and the first tap that reached
//     it, as ATen's strict `>` does; the tap becomes the index ih * W + iw.
// Every result is kernels/quantized's and portable's bit for bit: the same plans and checks
// (kernels/quantized/util/geometry.h), the same requantization with the pools' ties-to-even final rounding, and
// their own window code for the windows not taken here. Other output sizes of the adaptive pool, windows over 255
// (average) or 256 (max) taps and column strides over 17 go to kernels/quantized and portable.
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/pool_rows.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

inline int32_t plane_sum(const int8_t* x, int32_t n) {
  int32_t sum = 0;
  for (; n >= 16; n -= 16, x += 16) sum = vaddvaq_s8(sum, vldrbq_s8(x));
  if (n > 0) sum = vaddvaq_s8(sum, vldrbq_z_s8(x, vctp8q(static_cast<uint32_t>(n))));
  return sum;
}

// Each plane's average: its centered sum requantized by `s`.
void global_pool(const int8_t* x, int8_t* o, int32_t planes, int32_t plane, const quantized::RequantSteps& s,
                 int32_t zp_in, int32_t zp_out) {
  const int32x4_t multiplier = vdupq_n_s32(s.multiplier), left = vdupq_n_s32(s.left);
  const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
  // The zero point once per window; |centered| <= 255 * plane, which the checks keep within int32.
  const int32_t zero_sum = zp_in * plane;
  for (int32_t c = 0; c < planes; c += 4, o += 4) {
    const int32_t n = planes - c < 4 ? planes - c : 4;
    int32_t lanes[4] = {0, 0, 0, 0};
    for (int32_t i = 0; i < n; ++i) lanes[i] = plane_sum(x + (c + i) * plane, plane) - zero_sum;
    const int32x4_t sums = vldrwq_s32(lanes);
    // Averages round their exact ties to even, as the scalar pools do (kernels/quantized/op_pool.cc).
    const int32x4_t v = requant_steps_lanes_ties_to_even(sums, multiplier, left, s.right);
    vstrbq_p_s32(o, to_output_range(v, zp_out, lo, hi), vctp32q(static_cast<uint32_t>(n)));
  }
}

// ---- windowed average ------------------------------------------------------------------------------------------

using quantized::AvgPoolPlan;
using quantized::AvgWindow;
using quantized::RequantSteps;

PoolRows rows_of(const portable::PoolGeometry& g) {
  return PoolRows{static_cast<int32_t>(g.H),  static_cast<int32_t>(g.W),  static_cast<int32_t>(g.KH),
                  static_cast<int32_t>(g.KW), static_cast<int32_t>(g.SH), static_cast<int32_t>(g.SW),
                  static_cast<int32_t>(g.PH), static_cast<int32_t>(g.PW), static_cast<int32_t>(g.DH),
                  static_cast<int32_t>(g.DW), static_cast<int32_t>(g.OH), static_cast<int32_t>(g.OW)};
}

// Planes, windows and strides whose arithmetic fits int32 with room (the board's tensors are far smaller).
bool fits_32bit(const portable::PoolGeometry& g) {
  const int64_t limit = INT32_MAX / 4;
  return g.H * g.W <= limit && g.OH * g.OW <= limit && g.SH * g.OH <= limit && g.SW * g.OW <= limit &&
         g.DH * g.KH <= limit && g.DW * g.KW <= limit && g.batch * g.C <= limit;
}

// One window with no padding covering the whole plane: a global pool.
bool whole_plane(const portable::PoolGeometry& g) {
  return g.OH == 1 && g.OW == 1 && g.KH == g.H && g.KW == g.W && g.PH == 0 && g.PW == 0;
}

// One row's requantization on 32-bit lanes: its windows' count times the input zero point, then the steps.
struct RowSteps {
  int32x4_t multiplier, left;
  int32_t right, zero_sum, zp_out;
};

inline int32x4_t average_lanes(int32x4_t sums, const RowSteps& s) {
  const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
  const int32x4_t v = requant_steps_lanes_ties_to_even(vsubq_n_s32(sums, s.zero_sum), s.multiplier, s.left, s.right);
  return to_output_range(v, s.zp_out, lo, hi);
}

// The sums of sixteen windows (even and odd outputs apart) requantized, in order. Out of line: each kind of block
// calls it.
__attribute__((noinline)) int8x16_t average_bytes(int16x8_t even, int16x8_t odd, const RowSteps& s) {
  // Outputs 0, 4, 8, 12 | 2, 6, 10, 14 | 1, 5, 9, 13 | 3, 7, 11, 15 in 32-bit lanes, requantized in a loop rather
  // than four inlined copies of the steps.
  int32x4_t q[4] = {vmovlbq_s16(even), vmovltq_s16(even), vmovlbq_s16(odd), vmovltq_s16(odd)};
#pragma GCC unroll 1
  for (int i = 0; i < 4; ++i) q[i] = average_lanes(q[i], s);
  const int16x8_t evens = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), q[0]), q[1]);
  const int16x8_t odds = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), q[2]), q[3]);
  return vmovntq_s16(vmovnbq_s16(vdupq_n_s8(0), evens), odds);
}

// A row's windows inside the input's columns all cover the same kernel rows and KW columns, so share a divisor and
// its steps: those of its window at column lo.
RowSteps row_steps(const AvgPoolPlan& plan, int32_t oh, int32_t lo, quantized::AvgPoolSteps* inside) {
  const AvgWindow a = quantized::avg_window(plan, oh, lo);
  const RequantSteps& rs = quantized::avg_pool_steps(plan, a.divisor, inside);
  return RowSteps{vdupq_n_s32(rs.multiplier), vdupq_n_s32(rs.left), rs.right,
                  plan.zp_in * static_cast<int32_t>((a.h1 - a.h0) * (a.w1 - a.w0)), plan.zp_out};
}

// Output rows [oh0, oh1) over columns [lo, hi), whose windows lie inside the input's columns, sixteen outputs per
// block. A row's windows all cover the same kernel rows and KW columns, so they share a divisor and its steps. The
// sums stay in 16 bits (the callers keep windows to 255 taps); the widening moves split them into even and odd
// outputs, which average_bytes puts back in order.
void average_rows(const AvgPoolPlan& plan, const PoolRows& p, TapLoads loads, const int8_t* plane, int32_t oh0,
                  int32_t oh1, int32_t lo, int32_t hi, quantized::AvgPoolSteps* inside, int8_t* o) {
  const uint8x16_t offsets = vmulq_n_u8(vidupq_n_u8(0, 1), static_cast<uint8_t>(p.SW));
  for (int32_t oh = oh0; oh < oh1; ++oh) {
    int32_t kh_lo, kh_hi;
    valid_rows(p, oh, &kh_lo, &kh_hi);
    if (kh_lo >= kh_hi) continue;
    const RowSteps s = row_steps(plan, oh, lo, inside);
    const int8_t* first_row = plane + (oh * p.SH - p.PH) * p.W - p.PW;
    for (int32_t ow = lo; ow < hi; ow += 16) {
      const int32_t n = hi - ow < 16 ? hi - ow : 16;
      const mve_pred16_t active = vctp8q(static_cast<uint32_t>(n));
      int16x8_t even = vdupq_n_s16(0), odd = vdupq_n_s16(0);
      for (int32_t kh = kh_lo; kh < kh_hi; ++kh) {
        row_taps(p, loads, first_row + kh * p.DH * p.W + ow * p.SW, offsets, active, [&](int32_t, int8x16_t v) {
          even = vaddq_s16(even, vmovlbq_s8(v));
          odd = vaddq_s16(odd, vmovltq_s8(v));
        });
      }
      const int8x16_t bytes = average_bytes(even, odd, s);
      if (n == 16) {
        vstrbq_s8(o + oh * p.OW + ow, bytes);
      } else {
        vstrbq_p_s8(o + oh * p.OW + ow, bytes, active);
      }
    }
  }
}

// How many rows of w (at most 8) outputs one block can hold: lane j is output (oh + j / w, lo + j % w), its window's
// taps gathered and its result scattered at byte offsets, which must stay below 256. 1 when rows do not share.
int32_t rows_per_block(const PoolRows& p, int32_t w) {
  if (w > 8) return 1;
  int32_t rows = 16 / w;
  while (rows > 1 && ((rows - 1) * p.SH * p.W + (w - 1) * p.SW > 255 || (rows - 1) * p.OW + w - 1 > 255)) --rows;
  return rows;
}

// `groups` blocks of `rows` output rows from oh0, over columns [lo, hi) (w = hi - lo outputs each, rows * w <= 16):
// rows whose windows lie wholly inside the input, so that all of them cover every kernel row and share one
// divisor. Narrow planes (a small CNN's late pools) would otherwise leave most lanes of each block empty.
void average_row_groups(const AvgPoolPlan& plan, const PoolRows& p, const int8_t* plane, int32_t oh0, int32_t groups,
                        int32_t rows, int32_t lo, int32_t hi, quantized::AvgPoolSteps* inside, int8_t* o) {
  const int32_t w = hi - lo;
  uint8_t in_at[16], out_at[16];
  for (int32_t j = 0; j < 16; ++j) {
    const bool used = j < rows * w;
    in_at[j] = used ? static_cast<uint8_t>(j / w * p.SH * p.W + j % w * p.SW) : 0;
    out_at[j] = used ? static_cast<uint8_t>(j / w * p.OW + j % w) : 0;
  }
  const uint8x16_t in_offsets = vldrbq_u8(in_at), out_offsets = vldrbq_u8(out_at);
  const mve_pred16_t active = vctp8q(static_cast<uint32_t>(rows * w));
  const RowSteps s = row_steps(plan, oh0, lo, inside);
  for (int32_t oh = oh0; oh < oh0 + groups * rows; oh += rows) {
    const int8_t* first_row = plane + (oh * p.SH - p.PH) * p.W + lo * p.SW - p.PW;
    int16x8_t even = vdupq_n_s16(0), odd = vdupq_n_s16(0);
    for (int32_t kh = 0; kh < p.KH; ++kh) {
      row_taps(p, TapLoads::kGather, first_row + kh * p.DH * p.W, in_offsets, active, [&](int32_t, int8x16_t v) {
        even = vaddq_s16(even, vmovlbq_s8(v));
        odd = vaddq_s16(odd, vmovltq_s8(v));
      });
    }
    vstrbq_scatter_offset_p_s8(o + oh * p.OW + lo, out_offsets, average_bytes(even, odd, s), active);
  }
}

// Whether the row kernel takes the call: windows of at most 255 taps (16-bit sums of int8) and strides the loads
// serve. Others go through the scalar kernel.
bool average_rows_apply(const portable::PoolGeometry& g) { return g.KH * g.KW <= 255 && g.SW <= 17; }

// The windows that meet the left or right padding (or lie in it) go one at a time, the scalar kernel's way, with
// their own cached steps (`border`), apart from the ones the rows share (`inside`).
void average_plane(const AvgPoolPlan& plan, const PoolRows& p, const int8_t* x, int8_t* o,
                   quantized::AvgPoolSteps* border, quantized::AvgPoolSteps* inside) {
  int32_t lo, hi;
  inside_columns(p, &lo, &hi);
  for (int32_t oh = 0; oh < p.OH; ++oh) {
    int32_t kh_lo, kh_hi;
    valid_rows(p, oh, &kh_lo, &kh_hi);
    const bool vector = kh_lo < kh_hi && lo < hi;
    for (int32_t ow = 0; ow < p.OW; ++ow) {
      if (vector && ow == lo) {
        ow = hi - 1;
        continue;
      }
      o[oh * p.OW + ow] = quantized::avg_pool_window(plan, x, oh, ow, border);
    }
  }
  if (lo >= hi) return;
  // Rows [g0, g1) go several to a block where the plane is narrow; the others one block per sixteen outputs, with
  // full loads where they stay inside the plane.
  int32_t g0 = 0, g1 = 0;
  const int32_t rows = rows_per_block(p, hi - lo);
  if (rows > 1) {
    int32_t kh_lo = 0, kh_hi = 0;
    for (; g0 < p.OH; ++g0) {
      valid_rows(p, g0, &kh_lo, &kh_hi);
      if (kh_lo == 0 && kh_hi == p.KH) break;
    }
    for (g1 = g0; g1 < p.OH; ++g1) {
      valid_rows(p, g1, &kh_lo, &kh_hi);
      if (kh_lo != 0 || kh_hi != p.KH) break;
    }
    const int32_t groups = (g1 - g0) / rows;
    g1 = g0 + groups * rows;
    if (groups > 0) average_row_groups(plan, p, x, g0, groups, rows, lo, hi, inside, o);
  }
  const int32_t full = full_load_rows(p, lo, hi);
  auto run = [&](int32_t a, int32_t b) {
    const int32_t m = full < a ? a : full > b ? b : full;
    if (a < m) average_rows(plan, p, full_loads(p), x, a, m, lo, hi, inside, o);
    if (m < b) average_rows(plan, p, TapLoads::kGather, x, m, b, lo, hi, inside, o);
  };
  run(0, g0);
  run(g1, p.OH);
}

// ---- max --------------------------------------------------------------------------------------------------------

// Output rows [oh0, oh1) over columns [lo, hi), whose windows lie inside the input's columns, sixteen outputs per
// block. Each tap t = kh * KW + kw (below 256) becomes a 16-bit key, value * 256 + 255 - t, so one VMAX keeps both
// the greatest value and, among equal values, the first tap, as ATen's strict `>` does. The widening shifts split
// the sixteen outputs into even and odd lanes; the narrowing shifts put them back in order. The start, -128 * 256,
// reads back as value -128 at tap 255, as any tap 255 of that value would.
//
// A lane's index is the input position of its tap, (h0 + kh * DH) * W + c + j * SW + kw * DW: with kh = t / KW by a
// multiply and shift (exact for t and KW below 256), origin + j * SW + t * DW + kh * (DH * W - KW * DW), stored as
// int64: the low word, then a zero high word (the indices are non-negative).
void max_rows(const PoolRows& p, TapLoads loads, const int8_t* plane, int32_t oh0, int32_t oh1, int32_t lo, int32_t hi,
              int8_t* o, int64_t* index) {
  const uint8x16_t offsets = vmulq_n_u8(vidupq_n_u8(0, 1), static_cast<uint8_t>(p.SW));
  const uint32_t magic = 65536u / static_cast<uint32_t>(p.KW) + 1u;
  const int32_t row_step = p.DH * p.W - p.KW * p.DW;
  const int32x4_t lanes = vmulq_n_s32(vreinterpretq_s32_u32(vidupq_n_u32(0, 1)), p.SW), zero = vdupq_n_s32(0);
  for (int32_t oh = oh0; oh < oh1; ++oh) {
    int32_t kh_lo, kh_hi;
    valid_rows(p, oh, &kh_lo, &kh_hi);
    if (kh_lo >= kh_hi) continue;
    const int32_t h0 = oh * p.SH - p.PH;
    for (int32_t ow = lo; ow < hi; ow += 16) {
      const int32_t n = hi - ow < 16 ? hi - ow : 16, c = ow * p.SW - p.PW;
      const mve_pred16_t active = vctp8q(static_cast<uint32_t>(n));
      int16x8_t even = vdupq_n_s16(INT16_MIN), odd = vdupq_n_s16(INT16_MIN);
      for (int32_t kh = kh_lo; kh < kh_hi; ++kh) {
        const int32_t rank = 255 - kh * p.KW;  // 255 - t for the row's first tap
        row_taps(p, loads, plane + (h0 + kh * p.DH) * p.W + c, offsets, active, [&](int32_t kw, int8x16_t v) {
          even = vmaxq_s16(even, vaddq_n_s16(vshllbq_n_s8(v, 8), static_cast<int16_t>(rank - kw)));
          odd = vmaxq_s16(odd, vaddq_n_s16(vshlltq_n_s8(v, 8), static_cast<int16_t>(rank - kw)));
        });
      }
      const int8x16_t best = vshrntq_n_s16(vshrnbq_n_s16(vdupq_n_s8(0), even, 8), odd, 8);
      int8_t* out = o + oh * p.OW + ow;
      if (n == 16) {
        vstrbq_s8(out, best);
      } else {
        vstrbq_p_s8(out, best, active);
      }
      uint8_t taps[16];
      vstrbq_u8(taps, vmvnq_u8(vreinterpretq_u8_s8(vmovntq_s16(vmovnbq_s16(vdupq_n_s8(0), even), odd))));
      int64_t* at = index + oh * p.OW + ow;
      const int32_t origin = h0 * p.W + c;
      int32_t j = 0;
#pragma GCC unroll 4
      for (int32x4_t base = vaddq_n_s32(lanes, origin); j + 4 <= n; j += 4, base = vaddq_n_s32(base, 4 * p.SW)) {
        const uint32x4_t t = vldrbq_u32(taps + j);
        const int32x4_t kh = vreinterpretq_s32_u32(vshrq_n_u32(vmulq_n_u32(t, magic), 16));
        const int32x4x2_t wide = {{vmlaq_n_s32(vmlaq_n_s32(base, vreinterpretq_s32_u32(t), p.DW), kh, row_step), zero}};
        vst2q_s32(reinterpret_cast<int32_t*>(at + j), wide);
      }
      for (; j < n; ++j) {
        const int32_t kh = taps[j] / p.KW, kw = taps[j] - kh * p.KW;
        at[j] = origin + j * p.SW + kh * p.DH * p.W + kw * p.DW;
      }
    }
  }
}

// A window portable's way (those meeting the left or right padding, or lying in it).
__attribute__((noinline)) void max_window(const portable::PoolGeometry& g, const int8_t* plane, int32_t oh, int32_t ow,
                                          int8_t* o, int64_t* index) {
  int32_t best;
  portable::max_window<int32_t>(plane, g.W, 1, g, oh, ow, &best, index);
  *o = static_cast<int8_t>(best);
}

void max_plane(const portable::PoolGeometry& g, const PoolRows& p, const int8_t* x, int8_t* o, int64_t* index) {
  int32_t lo, hi;
  inside_columns(p, &lo, &hi);
  for (int32_t oh = 0; oh < p.OH; ++oh) {
    int32_t kh_lo, kh_hi;
    valid_rows(p, oh, &kh_lo, &kh_hi);
    const bool vector = kh_lo < kh_hi && lo < hi;
    for (int32_t ow = 0; ow < p.OW; ++ow) {
      if (vector && ow == lo) {
        ow = hi - 1;
        continue;
      }
      max_window(g, x, oh, ow, o + oh * p.OW + ow, index + oh * p.OW + ow);
    }
  }
  if (lo >= hi) return;
  const int32_t full = full_load_rows(p, lo, hi);
  if (full > 0) max_rows(p, full_loads(p), x, 0, full, lo, hi, o, index);
  if (full < p.OH) max_rows(p, TapLoads::kGather, x, full, p.OH, lo, hi, o, index);
}

}  // namespace

void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out) {
  const bool global = output_size.size() == 2 && output_size[0] == 1 && output_size[1] == 1;
  if (!global) {
    quantized::adaptive_avg_pool2d_out(ctx, input, input_scale, input_zero_point, output_size, output_scale,
                                       output_zero_point, out);
    return;
  }
  quantized::PoolPlan plan;
  if (!quantized::plan_adaptive_avg_pool(ctx, input, input_scale, input_zero_point, output_size, output_scale,
                                         output_zero_point, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::adaptive_avg_pool2d_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::adaptive_avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int32_t plane = static_cast<int32_t>(plan.H * plan.W);
    global_pool(input.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(),
                static_cast<int32_t>(input.numel() / plane), plane, plan.steps[0][0], plan.zp_in, plan.zp_out);
  });
}

void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, bool ceil_mode,
                    bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out) {
  AvgPoolPlan plan;
  if (!quantized::plan_avg_pool(ctx, input, input_scale, input_zero_point, kernel_size, stride, padding, ceil_mode,
                                count_include_pad, divisor_override, output_scale, output_zero_point, out, &plan)) {
    return;
  }
  const portable::PoolGeometry& g = plan.g;
  if (!fits_32bit(g) || (!whole_plane(g) && !average_rows_apply(g))) {
    quantized::avg_pool2d_out(ctx, input, input_scale, input_zero_point, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override, output_scale, output_zero_point, out);
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::avg_pool2d_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t planes = static_cast<int32_t>(g.batch * g.C), plane = static_cast<int32_t>(g.H * g.W);
    quantized::AvgPoolSteps border, inside;
    if (whole_plane(g)) {
      global_pool(x, o, planes, plane,
                  quantized::avg_pool_steps(plan, quantized::avg_window(plan, 0, 0).divisor, &inside), plan.zp_in,
                  plan.zp_out);
      return;
    }
    const PoolRows p = rows_of(g);
    for (int32_t i = 0; i < planes; ++i) {
      average_plane(plan, p, x + i * plane, o + i * static_cast<int32_t>(g.OH * g.OW), &border, &inside);
    }
  });
}

bool max_pool_int8_vectorizes(const portable::PoolGeometry& g) {
  return fits_32bit(g) && g.KH * g.KW <= 256 && g.SW <= 17;
}

void max_pool_int8(const portable::PoolGeometry& g, const int8_t* x, int8_t* out, int64_t* indices) {
  const PoolRows p = rows_of(g);
  const int32_t plane = p.H * p.W, pooled = p.OH * p.OW;
  for (int32_t i = 0; i < static_cast<int32_t>(g.batch * g.C); ++i) {
    max_plane(g, p, x + i * plane, out + i * pooled, indices + i * pooled);
  }
}

}  // namespace helium
}  // namespace ember
