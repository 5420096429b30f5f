// Pooling and mean for Float on MVE, contiguous tensors (other dim orders and dtypes go to portable; max pooling's
// int8 calls, once checked here, to op_pool.cc):
//   max_pool2d_with_indices, avg_pool2d  four output columns per vector for windows wholly inside the input (a
//     gather per tap at any stride), windows that touch the padding one at a time as portable takes them. Max
//     keeps ATen's order and test (`v > best or isnan(v)`), so values and indices are eager's; avg adds a window
//     in portable's order and divides as it does, so results are portable's bit for bit.
//   mean over trailing dims (a global average pool): four outputs per vector, each summed in order from a gather
//     of one element per output per step, then divided: portable's sums, bit for bit.
// Checks and messages are portable's (util/spatial_util.h, util/reduce_util.h).
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace helium {
namespace {

using portable::PoolGeometry;

bool float_selected(uint32_t mask) { return (mask & dtype_bit(ScalarType::Float)) != 0; }

// Planes and windows in 32 bits (a pooled plane of the board's memory is far below 2^31 elements).
struct Pool {
  int32_t H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

Pool pool_of(const PoolGeometry& g) {
  return Pool{static_cast<int32_t>(g.H),  static_cast<int32_t>(g.W),  static_cast<int32_t>(g.KH),
              static_cast<int32_t>(g.KW), static_cast<int32_t>(g.SH), static_cast<int32_t>(g.SW),
              static_cast<int32_t>(g.PH), static_cast<int32_t>(g.PW), static_cast<int32_t>(g.DH),
              static_cast<int32_t>(g.DW), static_cast<int32_t>(g.OH), static_cast<int32_t>(g.OW)};
}

bool fits_32bit(const PoolGeometry& g) {
  const int64_t limit = INT32_MAX / 4;
  return g.H * g.W <= limit && g.OH * g.OW <= limit && g.SH * g.OH <= limit && g.SW * g.OW <= limit &&
         g.DH * g.KH <= limit && g.DW * g.KW <= limit;
}

// Output columns [lo, hi) of a row whose windows lie wholly inside the input's columns.
void inside_columns(const Pool& p, int32_t* lo, int32_t* hi) {
  *lo = p.PW > 0 ? (p.PW + p.SW - 1) / p.SW : 0;
  const int32_t last = p.W - 1 - (p.KW - 1) * p.DW + p.PW;  // the last window start inside, plus the padding
  *hi = last < 0 ? 0 : last / p.SW + 1;
  if (*hi > p.OW) *hi = p.OW;
  if (*lo > *hi) *lo = *hi;
}

bool row_inside(const Pool& p, int32_t oh) {
  const int32_t h0 = oh * p.SH - p.PH;
  return h0 >= 0 && h0 + (p.KH - 1) * p.DH < p.H;
}

// ---- max ------------------------------------------------------------------------------------------------------

// Four windows at columns ow..ow + 3 of row oh, all inside the input; indices stored as int64 (low word, then a
// zero high word: they are non-negative).
void max_windows(const Pool& p, const float* x, int32_t oh, int32_t ow, float* o, int64_t* index) {
  const uint32_t col = static_cast<uint32_t>(ow * p.SW - p.PW), row = static_cast<uint32_t>(oh * p.SH - p.PH);
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(p.SW));
  const uint32x4_t first = vaddq_n_u32(offsets, row * static_cast<uint32_t>(p.W) + col);
  float32x4_t best = vldrwq_gather_shifted_offset_f32(x, first);
  uint32x4_t at = first;
  for (int32_t kh = 0; kh < p.KH; ++kh) {
    for (int32_t kw = kh == 0 ? 1 : 0; kw < p.KW; ++kw) {
      const uint32x4_t tap = vaddq_n_u32(first, static_cast<uint32_t>(kh * p.DH * p.W + kw * p.DW));
      const float32x4_t v = vldrwq_gather_shifted_offset_f32(x, tap);
      // ATen's test: a greater value, or a NaN (GT is false for unordered operands, NE true).
      const mve_pred16_t take = vcmpgtq_f32(v, best) | vcmpneq_f32(v, v);
      best = vpselq_f32(v, best, take);
      at = vpselq_u32(tap, at, take);
    }
  }
  vstrwq_f32(o, best);
  const uint32x4x2_t wide = {{at, vdupq_n_u32(0)}};
  vst2q_u32(reinterpret_cast<uint32_t*>(index), wide);
}

void max_plane(const PoolGeometry& g, const Pool& p, const float* x, float* o, int64_t* index) {
  int32_t lo, hi;
  inside_columns(p, &lo, &hi);
  for (int32_t oh = 0; oh < p.OH; ++oh, o += p.OW, index += p.OW) {
    int32_t ow = 0;
    if (row_inside(p, oh)) {
      for (ow = lo; ow + 4 <= hi; ow += 4) max_windows(p, x, oh, ow, o + ow, index + ow);
      for (int32_t j = 0; j < lo; ++j) portable::max_window(x, p.W, 1, g, oh, j, &o[j], &index[j]);
    } else {
      ow = 0;
    }
    for (; ow < p.OW; ++ow) portable::max_window(x, p.W, 1, g, oh, ow, &o[ow], &index[ow]);
  }
}

// ---- average --------------------------------------------------------------------------------------------------

// Portable's one window (its order, its divisor, its division).
float average_window(const float* x, const Pool& p, int32_t oh, int32_t ow, bool count_include_pad,
                     const Optional<int64_t>& divisor_override) {
  const int32_t h0 = oh * p.SH - p.PH, w0 = ow * p.SW - p.PW;
  int32_t h1 = h0 + p.KH, w1 = w0 + p.KW;
  const int32_t hp = h1 < p.H + p.PH ? h1 : p.H + p.PH, wp = w1 < p.W + p.PW ? w1 : p.W + p.PW;
  const int64_t padded = static_cast<int64_t>(hp - h0) * (wp - w0);
  const int32_t hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;
  h1 = h1 < p.H ? h1 : p.H;
  w1 = w1 < p.W ? w1 : p.W;
  float sum = 0.0f;
  for (int32_t ih = hs; ih < h1; ++ih) {
    for (int32_t iw = ws; iw < w1; ++iw) sum += x[ih * p.W + iw];
  }
  const int64_t divisor = divisor_override.has_value() ? divisor_override.value()
                          : count_include_pad          ? padded
                                                       : static_cast<int64_t>(h1 - hs) * (w1 - ws);
  return sum / static_cast<float>(divisor);
}

// Four windows inside the input, summed in portable's order (rows, then columns, from 0) and divided by `divisor`.
void average_windows(const Pool& p, const float* x, int32_t oh, int32_t ow, float divisor, float* o) {
  const uint32_t col = static_cast<uint32_t>(ow * p.SW - p.PW), row = static_cast<uint32_t>(oh * p.SH - p.PH);
  const uint32x4_t first =
      vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(p.SW)), row * static_cast<uint32_t>(p.W) + col);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (int32_t kh = 0; kh < p.KH; ++kh) {
    for (int32_t kw = 0; kw < p.KW; ++kw) {
      const uint32x4_t tap = vaddq_n_u32(first, static_cast<uint32_t>(kh * p.W + kw));
      sum = vaddq_f32(sum, vldrwq_gather_shifted_offset_f32(x, tap));
    }
  }
  // MVE has no vector divide; the FPU divides each lane as portable's scalar code does.
  o[0] = vgetq_lane_f32(sum, 0) / divisor;
  o[1] = vgetq_lane_f32(sum, 1) / divisor;
  o[2] = vgetq_lane_f32(sum, 2) / divisor;
  o[3] = vgetq_lane_f32(sum, 3) / divisor;
}

void average_plane(const Pool& p, const float* x, float* o, bool count_include_pad,
                   const Optional<int64_t>& divisor_override) {
  int32_t lo, hi;
  inside_columns(p, &lo, &hi);
  // A window inside the input counts KH * KW elements, padding included or not.
  const float inside_divisor =
      static_cast<float>(divisor_override.has_value() ? divisor_override.value() : static_cast<int64_t>(p.KH) * p.KW);
  for (int32_t oh = 0; oh < p.OH; ++oh, o += p.OW) {
    int32_t ow = 0;
    if (row_inside(p, oh)) {
      for (ow = lo; ow + 4 <= hi; ow += 4) average_windows(p, x, oh, ow, inside_divisor, o + ow);
      for (int32_t j = 0; j < lo; ++j) o[j] = average_window(x, p, oh, j, count_include_pad, divisor_override);
    }
    for (; ow < p.OW; ++ow) o[ow] = average_window(x, p, oh, ow, count_include_pad, divisor_override);
  }
}

// ---- mean -----------------------------------------------------------------------------------------------------

// Whether the plan reduces trailing dims, so output i reduces x[i * n, (i + 1) * n).
bool reduces_trailing(const portable::ReducePlan& plan) {
  if (plan.nreduced == 0 || plan.reduced_numel == 0 || plan.reduced_strides[plan.nreduced - 1] != 1) return false;
  for (int32_t k = 0; k + 1 < plan.nreduced; ++k) {
    if (plan.reduced_strides[k] != plan.reduced_strides[k + 1] * plan.reduced_sizes[k + 1]) return false;
  }
  for (int32_t k = 0; k < plan.nkept; ++k) {
    if (plan.kept_sizes[k] > 1 && plan.kept_strides[k] < plan.reduced_numel) return false;
  }
  return true;
}

// o[i] = (sum of x[i * n + r], r in order) / n for i < rows: four rows per vector, one gather per step.
void row_means(const float* x, int32_t rows, int32_t n, float* o) {
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(n));
  const float count = static_cast<float>(n);
  for (int32_t i = 0; i < rows; i += 4, x += 4 * n, o += 4) {
    const mve_pred16_t real = vctp32q(static_cast<uint32_t>(rows - i));
    float32x4_t sum = vdupq_n_f32(0.0f);
    for (int32_t r = 0; r < n; ++r) sum = vaddq_f32(sum, vldrwq_gather_shifted_offset_z_f32(x + r, offsets, real));
    float lanes[4];
    vstrwq_f32(lanes, sum);
    for (int32_t l = 0; l < 4 && i + l < rows; ++l) o[l] = lanes[l] / count;
  }
}

}  // namespace

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  // Float here, int8 (the quantized programs' max pools, on their int8 tensors) in op_pool.cc.
  constexpr uint32_t kMask = selected_dtypes::max_pool2d_with_indices_out_helium;
  const bool int8 = self.scalar_type() == ScalarType::Char && (kMask & dtype_bit(ScalarType::Char)) != 0;
  if (!(int8 || (float_selected(kMask) && self.scalar_type() == ScalarType::Float)) || !self.is_contiguous() ||
      !out.is_contiguous() || !indices.is_contiguous()) {
    return portable::max_pool2d_with_indices_out(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                                                 indices);
  }
  PoolGeometry g;
  EMBER_KERNEL_CHECK(ctx, portable::pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g),
                     InvalidArgument,
                     "max_pool2d_with_indices.out: invalid geometry for a %d-d input (kernel, stride and dilation "
                     "in [1, 2^31), padding at most half the kernel)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, self, g) && portable::fit_pooled(indices, self, g), InvalidArgument,
                     "max_pool2d_with_indices.out: out and indices must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, indices.scalar_type() == ScalarType::Long && self.scalar_type() == out.scalar_type(),
                     InvalidArgument, "max_pool2d_with_indices.out: indices must be Long and out match self's dtype");
  if (int8) {
    if (!max_pool_int8_vectorizes(g)) {
      return portable::max_pool2d_with_indices_out(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                                                   indices);
    }
    max_pool_int8(g, self.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(),
                  indices.mutable_data_ptr<int64_t>());
    return;
  }
  EMBER_KERNEL_CHECK(ctx, fits_32bit(g), NotSupported, "max_pool2d_with_indices.out: a plane of over 2^29 elements");
  const Pool p = pool_of(g);
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  int64_t* index = indices.mutable_data_ptr<int64_t>();
  for (int64_t plane = 0; plane < g.batch * g.C; ++plane) {
    max_plane(g, p, x + plane * g.H * g.W, o + plane * g.OH * g.OW, index + plane * g.OH * g.OW);
  }
}

void avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    Optional<int64_t> divisor_override, Tensor& out) {
  if (!float_selected(selected_dtypes::avg_pool2d_out_helium) || self.scalar_type() != ScalarType::Float ||
      !self.is_contiguous() || !out.is_contiguous()) {
    return portable::avg_pool2d_out(ctx, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                    divisor_override, out);
  }
  PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK(ctx,
                     portable::pool_geometry(self, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2), ceil_mode,
                                             &g),
                     InvalidArgument,
                     "avg_pool2d.out: invalid geometry for a %d-d input (kernel and "
                     "stride in [1, 2^31), padding at most half the kernel)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, self, g), InvalidArgument,
                     "avg_pool2d.out: out must be %lldx%lld per channel", static_cast<long long>(g.OH),
                     static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "avg_pool2d.out: self is %s but out is %s", scalar_type_name(self.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, !divisor_override.has_value() || divisor_override.value() != 0, InvalidArgument,
                     "avg_pool2d.out: divisor_override must not be 0");
  EMBER_KERNEL_CHECK(ctx, fits_32bit(g), NotSupported, "avg_pool2d.out: a plane of over 2^29 elements");
  const Pool p = pool_of(g);
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  for (int64_t plane = 0; plane < g.batch * g.C; ++plane) {
    average_plane(p, x + plane * g.H * g.W, o + plane * g.OH * g.OW, count_include_pad, divisor_override);
  }
}

void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out) {
  portable::ReducePlan plan;
  // Everything portable checks is checked there; here only whether this kernel's case applies.
  const bool mine = float_selected(selected_dtypes::mean_out_helium) && self.scalar_type() == ScalarType::Float &&
                    out.scalar_type() == ScalarType::Float &&
                    (!dtype.has_value() || dtype.value() == static_cast<int64_t>(ScalarType::Float)) &&
                    self.is_contiguous() && portable::make_reduce_plan(self, dim, keepdim, plan) &&
                    reduces_trailing(plan) && self.numel() <= INT32_MAX / 4;
  if (!mine) return portable::mean_out(ctx, self, dim, keepdim, dtype, out);
  EMBER_KERNEL_CHECK(ctx, portable::fit_output(out, plan.out_shape, plan.out_rank), InvalidArgument,
                     "mean.out: out has the wrong shape for a reduction of a %d-d input", static_cast<int>(self.dim()));
  row_means(self.const_data_ptr<float>(), static_cast<int32_t>(plan.out_numel),
            static_cast<int32_t>(plan.reduced_numel), out.mutable_data_ptr<float>());
}

}  // namespace helium
}  // namespace ember
