// ember_quantized::conv2d.out on MVE, NCHW int8 (the layout the program's tensors have). Two paths, chosen by
// plan_conv (util/conv_plan.h) from shapes alone:
//   depthwise: per input channel, a plane bordered with the input zero point; each output row is swept four
//     columns per vector, one widening load and one VMLA (four int32 multiply-accumulates) per tap;
//   patches: eight output pixels' taps gathered into contiguous patches, then four output channels at a time
//     meet each patch in VMLADAVA dot products (util/dot.h), and the four results are stored into their NCHW
//     planes with one scatter store.
// Same checks, messages and bits as kernels/quantized/op_conv2d.cc (util/geometry.h, util/requantize.h).
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/channel_block.h"
#include "kernels/helium/util/conv_plan.h"
#include "kernels/helium/util/dot.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/helium/util/requant_state.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace helium {
namespace {

// conv2d.out(input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding, dilation, groups,
//            output_scale, output_zero_point, activation_min, activation_max, out)
constexpr quantized::RequantArgs kArgs = {"ember_quantized::conv2d.out", 4, 1, 2, 3, 4, 5, 10, 11, 12, 13};

struct Call {
  const int8_t* x;       // this batch item's input
  const int8_t* w;
  const int32_t* bias;   // for channels whose correction needs 64 bits
  int8_t* o;             // this batch item's output
  const RequantState* q;
  ConvShape s;
  uint8_t* scratch;
};

ConvShape shape_of(const quantized::Conv2dGeometry& g) {
  return ConvShape{g.C, g.H, g.W, g.OC, g.Cg, g.KH, g.KW, g.OH, g.OW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups};
}

// n bytes from src to dst, 16 per predicated vector.
inline void copy_bytes(int8_t* dst, const int8_t* src, int64_t n) {
  for (; n > 0; n -= 16, dst += 16, src += 16) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n < 16 ? n : 16));
    vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
  }
}

inline void fill_bytes(int8_t* dst, int8_t value, int64_t n) {
  const int8x16_t v = vdupq_n_s8(value);
  for (; n > 0; n -= 16, dst += 16) vstrbq_p_s8(dst, v, vctp8q(static_cast<uint32_t>(n < 16 ? n : 16)));
}

// ---- depthwise ------------------------------------------------------------------------------------------------

// Input channel `c` into the bordered plane: zero-point rows above and below, zero-point columns either side.
void border_plane(const Call& k, const ConvPlan& plan, int64_t c, int8_t* plane) {
  const ConvShape& s = k.s;
  const int8_t zp = static_cast<int8_t>(k.q->header.input_zero_point);
  const int64_t cols = plan.plane_cols;
  fill_bytes(plane, zp, s.ph * cols + s.pw);
  const int8_t* src = k.x + c * s.H * s.W;
  for (int64_t r = 0; r < s.H; ++r) {
    int8_t* row = plane + (s.ph + r) * cols;
    copy_bytes(row + s.pw, src + r * s.W, s.W);
    // The right border of this row and the left one of the next are adjacent.
    fill_bytes(row + s.pw + s.W, zp, r + 1 < s.H ? 2 * s.pw : s.pw);
  }
  fill_bytes(plane + (s.ph + s.H) * cols, zp, s.ph * cols);
}

// Four output columns' widened inputs for one tap: contiguous at unit stride, else a gather.
inline int32x4_t load_columns(const int8_t* p, int64_t stride, uint32x4_t offsets) {
  return stride == 1 ? vldrbq_s32(p) : vldrbq_gather_offset_s32(p, offsets);
}

// Output channel `oc` from the bordered plane of its input channel.
void depthwise_channel(const Call& k, const ConvPlan& plan, int64_t oc, const int8_t* plane) {
  const ConvShape& s = k.s;
  const RequantState& q = *k.q;
  const int64_t taps = s.KH * s.KW;
  const int8_t* wk = k.w + oc * taps;
  const int32_t multiplier = q.multipliers()[oc], left = q.left_shifts()[oc];
  const int32_t negated_right = q.negated_right_shifts()[oc];
  const bool fits = q.corrections_fit();
  const int64_t correction = fits ? q.corrections()[oc]
                                  : wide_correction(wk, taps, k.bias, oc, q.header.input_zero_point);
  const int32x4_t lo = vdupq_n_s32(q.header.activation_min), hi = vdupq_n_s32(q.header.activation_max);
  const int32_t zp_out = q.header.output_zero_point;
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(s.sw));
  const int64_t cols = plan.plane_cols;
  int8_t* out = k.o + oc * s.OH * s.OW;
  for (int64_t oh = 0; oh < s.OH; ++oh) {
    const int8_t* top = plane + oh * s.sh * cols;
    for (int64_t ow0 = 0; ow0 < s.OW; ow0 += 4) {
      const int8_t* base = top + ow0 * s.sw;
      int32x4_t acc = vdupq_n_s32(0);
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        const int8_t* row = base + kh * s.dh * cols;
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          acc = vmlaq_n_s32(acc, load_columns(row + kw * s.dw, s.sw, offsets), wk[kh * s.KW + kw]);
        }
      }
      const int64_t n = s.OW - ow0 < 4 ? s.OW - ow0 : 4;
      int32x4_t v;
      if (fits) {
        v = requant_steps_lanes(vqaddq_s32(acc, vdupq_n_s32(static_cast<int32_t>(correction))), multiplier, left,
                                negated_right);
        v = to_output_range(v, zp_out, lo, hi);
      } else {
        int32_t lanes[4];
        vstrwq_s32(lanes, acc);
        for (int64_t i = 0; i < n; ++i) lanes[i] = finish_wide(lanes[i], correction, q, oc);
        v = vldrwq_s32(lanes);
      }
      vstrbq_p_s32(out + oh * s.OW + ow0, v, vctp32q(static_cast<uint32_t>(n)));
    }
  }
}

void run_depthwise(const Call& k, const ConvPlan& plan) {
  int8_t* plane = reinterpret_cast<int8_t*>(k.scratch);
  const int64_t per_group = k.s.OC / k.s.groups;
  for (int64_t c = 0; c < k.s.C; ++c) {
    border_plane(k, plan, c, plane);
    for (int64_t m = 0; m < per_group; ++m) depthwise_channel(k, plan, c * per_group + m, plane);
  }
}

// ---- patches --------------------------------------------------------------------------------------------------

// The patch of output pixel (oh, ow) in group g: taps in the weight's (ci, kh, kw) order, the zero point where
// they fall outside the input.
void gather_patch(const Call& k, int64_t g, int64_t oh, int64_t ow, int8_t* patch) {
  const ConvShape& s = k.s;
  const int8_t zp = static_cast<int8_t>(k.q->header.input_zero_point);
  const int64_t iw0 = ow * s.sw - s.pw;
  const bool row_inside = iw0 >= 0 && iw0 + (s.KW - 1) * s.dw < s.W;
  for (int64_t ci = 0; ci < s.Cg; ++ci) {
    const int8_t* xc = k.x + (g * s.Cg + ci) * s.H * s.W;
    for (int64_t kh = 0; kh < s.KH; ++kh, patch += s.KW) {
      const int64_t ih = oh * s.sh - s.ph + kh * s.dh;
      if (ih < 0 || ih >= s.H) {
        fill_bytes(patch, zp, s.KW);
        continue;
      }
      const int8_t* xr = xc + ih * s.W;
      if (row_inside && s.dw == 1) {
        copy_bytes(patch, xr + iw0, s.KW);
        continue;
      }
      for (int64_t kw = 0; kw < s.KW; ++kw) {
        const int64_t iw = iw0 + kw * s.dw;
        patch[kw] = iw >= 0 && iw < s.W ? xr[iw] : zp;
      }
    }
  }
}

// A 1x1 convolution at unit stride without padding reads pixel p's channels at p in every plane: the patches of
// eight neighbouring pixels are the transpose of an 8-column strip of the input, moved eight bytes per load and
// eight per scatter store.
void transpose_strip(const Call& k, int64_t g, int64_t p0, int8_t* patches) {
  const ConvShape& s = k.s;
  const int64_t plane = s.H * s.W;
  const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0, 1), static_cast<uint16_t>(s.Cg));
  const int8_t* xg = k.x + g * s.Cg * plane + p0;
  for (int64_t ci = 0; ci < s.Cg; ++ci) {
    vstrbq_scatter_offset_s16(patches + ci, offsets, vldrbq_s16(xg + ci * plane));
  }
}

void gather_patches(const Call& k, int64_t g, int64_t p0, int64_t count, int8_t* patches, bool pointwise) {
  const ConvShape& s = k.s;
  // The scatter's offsets are 16-bit: seven patches apart must fit.
  if (pointwise && count == kPatchPixels && 7 * s.Cg <= UINT16_MAX) {
    transpose_strip(k, g, p0, patches);
    return;
  }
  const int64_t taps = s.Cg * s.KH * s.KW;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = p0 + i;
    gather_patch(k, g, p / s.OW, p % s.OW, patches + i * taps);
  }
}

// Four output channels (oc0.., n of them real) of `count` pixels from their patches.
void patches_times_channels(const Call& k, int64_t oc0, int64_t n, int64_t p0, int64_t count, const int8_t* patches,
                            int64_t taps) {
  const RequantState& q = *k.q;
  const int64_t out_plane = k.s.OH * k.s.OW;
  const int8_t* w0 = k.w + oc0 * taps;
  const int8_t* w1 = n > 1 ? w0 + taps : w0;
  const int8_t* w2 = n > 2 ? w0 + 2 * taps : w1;
  const int8_t* w3 = n > 3 ? w0 + 3 * taps : w2;
  const ChannelBlock block = channel_block(q, oc0);
  const int32x4_t lo = vdupq_n_s32(q.header.activation_min), hi = vdupq_n_s32(q.header.activation_max);
  const int32_t zp_out = q.header.output_zero_point;
  const uint32x4_t planes = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(out_plane));
  const mve_pred16_t real = vctp32q(static_cast<uint32_t>(n));
  int8_t* out = k.o + oc0 * out_plane + p0;
  for (int64_t i = 0; i < count; ++i) {
    const Sums4 sums = dot4(patches + i * taps, w0, w1, w2, w3, static_cast<int32_t>(taps));
    if (q.corrections_fit()) {
      vstrbq_scatter_offset_p_s32(out + i, planes, finish_block(sums, block, zp_out, lo, hi), real);
      continue;
    }
    const int32_t s[4] = {sums.s0, sums.s1, sums.s2, sums.s3};
    for (int64_t j = 0; j < n; ++j) {
      const int64_t oc = oc0 + j;
      out[i + j * out_plane] =
          finish_wide(s[j], wide_correction(k.w + oc * taps, taps, k.bias, oc, q.header.input_zero_point), q, oc);
    }
  }
}

void run_patches(const Call& k, const ConvPlan& plan) {
  const ConvShape& s = k.s;
  int8_t* patches = reinterpret_cast<int8_t*>(k.scratch);
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
  const int64_t out_plane = s.OH * s.OW, per_group = s.OC / s.groups;
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t p0 = 0; p0 < out_plane; p0 += kPatchPixels) {
      const int64_t count = out_plane - p0 < kPatchPixels ? out_plane - p0 : kPatchPixels;
      gather_patches(k, g, p0, count, patches, pointwise);
      for (int64_t oc0 = g * per_group; oc0 < (g + 1) * per_group; oc0 += 4) {
        const int64_t n = (g + 1) * per_group - oc0 < 4 ? (g + 1) * per_group - oc0 : 4;
        patches_times_channels(k, oc0, n, p0, count, patches, plan.taps);
      }
    }
  }
}

// The plan for a call as the program states it, or scratch 0 when its shapes are ones the kernel refuses.
ConvPlan plan_from_args(const KernelArgs& args) {
  const ConvPlan none{ConvPath::kPatches, 0, 0, 0, 0};
  const ArrayRef<int32_t> in = args.sizes(0), w = args.sizes(3);
  if (in.size() != 4 || w.size() != 4) return none;
  const size_t ns = args.list_size(6), np = args.list_size(7), nd = args.list_size(8);
  if (ns < 1 || ns > 2 || np < 1 || np > 2 || nd < 1 || nd > 2) return none;
  ConvShape s{in[1], in[2], in[3], w[0], w[1], w[2], w[3], 0, 0,
              args.list_item(6, 0), args.list_item(6, ns - 1), args.list_item(7, 0), args.list_item(7, np - 1),
              args.list_item(8, 0), args.list_item(8, nd - 1), args.to_int(9)};
  auto within = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  if (!within(s.sh, 1, INT32_MAX) || !within(s.sw, 1, INT32_MAX) || !within(s.dh, 1, INT32_MAX) ||
      !within(s.dw, 1, INT32_MAX) || !within(s.ph, 0, INT32_MAX) || !within(s.pw, 0, INT32_MAX) ||
      !within(s.groups, 1, INT32_MAX) || s.C <= 0 || s.OC <= 0 || s.Cg <= 0 || s.KH <= 0 || s.KW <= 0 ||
      s.Cg > quantized::kMaxAccumulatedProducts || s.KH > quantized::kMaxAccumulatedProducts ||
      s.KW > quantized::kMaxAccumulatedProducts || s.Cg * s.KH * s.KW > quantized::kMaxAccumulatedProducts) {
    return none;
  }
  return plan_conv(s);
}

}  // namespace

KernelMemory conv2d_memory(const KernelArgs& args) {
  KernelMemory m = requant_state_memory(args, kArgs);
  m.scratch = round16(plan_from_args(args).scratch);
  return m;
}

Error conv2d_prepare(const KernelArgs& args, void* state) { return prepare_requant_state(args, kArgs, state); }

// The quantization arguments are read from the state conv2d_prepare filled, not from here.
void conv2d_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* bias,
                ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups,
                double /*output_scale*/, int64_t /*output_zero_point*/, int64_t /*activation_min*/,
                int64_t /*activation_max*/, Tensor& out) {
  // The checks (shared with kernels/quantized) include that the state was prepared for this weight.
  quantized::Conv2dGeometry geo;
  if (!quantized::conv2d_geometry(ctx, input, weight, stride, padding, dilation, groups, out, &geo)) return;
  const ConvShape shape = shape_of(geo);
  const ConvPlan plan = plan_conv(shape);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= plan.scratch, InvalidState,
                     "ember_quantized::conv2d.out: needs %zu bytes of scratch, was given %zu", plan.scratch,
                     ctx.scratch().size());
  constexpr uint32_t kMask = selected_dtypes::conv2d_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::conv2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    for (int64_t n = 0; n < geo.N; ++n) {
      const Call k{x + n * geo.C * geo.H * geo.W,
                   weight.const_data_ptr<int8_t>(),
                   bias != nullptr ? bias->const_data_ptr<int32_t>() : nullptr,
                   o + n * geo.OC * geo.OH * geo.OW,
                   ctx.state<RequantState>(),
                   shape,
                   ctx.scratch().data()};
      if (plan.path == ConvPath::kDepthwise) {
        run_depthwise(k, plan);
      } else {
        run_patches(k, plan);
      }
    }
  });
}

}  // namespace helium
}  // namespace ember
