// aten::convolution.out and ember::convolution_clamp.out for Float on MVE, contiguous NCHW (other dim orders and
// dtypes go to portable, which reads strides). Four paths, chosen by plan_convolution from shapes alone so that
// the memory function (which sees only the program) and the kernel agree on the scratch:
//   pointwise  1x1, unit stride, no padding: the channel GEMM (util/channel_gemm_f32.h) on the input planes in
//              place, no scratch;
//   lanes      depthwise 3x3 at stride 1 or 2: four channels' zero-bordered planes interleaved, so each vector
//              holds four channels (util/depthwise_f32.h);
//   depthwise  other depthwise layers: each channel copied into a zero-bordered plane, its output rows swept four
//              columns per vector;
//   patches    everything else: the taps of a block of output pixels gathered into a K x pixels matrix (zeros
//              where they fall in the padding), then the channel GEMM on it.
// convolution_clamp clamps each output where it is written, with the scalar kernels' comparisons (NaN stays NaN).
// The argument checks and their messages are portable's (util/conv_util.h).
#include <stddef.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/channel_gemm_f32.h"
#include "kernels/helium/util/depthwise_f32.h"
#include "kernels/helium/util/elementwise_f32.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/conv_util.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace helium {
namespace {

using portable::ConvGeometry;

enum class ConvPath { kPointwise, kLanes, kDepthwise, kPatches };

struct ConvPlan {
  ConvPath path;
  int32_t block;        // patches: output pixels gathered per block (the patch matrix's row length)
  int32_t plane_rows;   // lanes, depthwise: the bordered plane
  int32_t plane_cols;
  size_t scratch;       // bytes
};

// The patch matrix is kept to about this many floats where the taps allow (a block is at least one channel
// block's six pixels); up to this many pixels per block, so runs along output rows are long.
constexpr int64_t kPatchFloats = 8192;
constexpr int64_t kMaxPatchPixels = 96;
// Bordered planes (four interleaved ones for the lanes path) larger than this are not worth their scratch: such
// layers take the next path (lanes, then depthwise, then patches).
constexpr int64_t kMaxPlaneFloats = 16384;

bool is_depthwise(const ConvGeometry& g) { return g.Cg == 1 && g.groups == g.Cin && g.groups > 1; }
bool is_pointwise(const ConvGeometry& g) {
  return g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

ConvPlan plan_convolution(const ConvGeometry& g) {
  if (is_pointwise(g)) return ConvPlan{ConvPath::kPointwise, 0, 0, 0, 0};
  if (is_depthwise(g)) {
    const int64_t rows = g.H + 2 * g.ph, cols = g.W + 2 * g.pw;
    const bool lanes = g.KH == 3 && g.KW == 3 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2);
    const bool fits = rows <= kMaxPlaneFloats && cols <= kMaxPlaneFloats;
    if (lanes && fits && lane_planes_floats(rows, cols) <= kMaxPlaneFloats) {
      return ConvPlan{ConvPath::kLanes, 0, static_cast<int32_t>(rows), static_cast<int32_t>(cols),
                      static_cast<size_t>(lane_planes_floats(rows, cols)) * sizeof(float)};
    }
    const int64_t floats = rows * cols + depthwise_slack_floats(static_cast<int32_t>(g.sw < 64 ? g.sw : 64));
    if (g.sw < 64 && fits && floats <= kMaxPlaneFloats) {
      return ConvPlan{ConvPath::kDepthwise, 0, static_cast<int32_t>(rows), static_cast<int32_t>(cols),
                      static_cast<size_t>(floats) * sizeof(float)};
    }
  }
  const int64_t taps = g.Cg * g.KH * g.KW;
  // In 32 bits (the callers checked fits_32bit): a 64-bit division is a library call on the M55, and MethodMeta
  // runs this for every convolution of a program.
  int64_t block = taps > 0 ? static_cast<int32_t>(kPatchFloats) / static_cast<int32_t>(taps) / 6 * 6 : kMaxPatchPixels;
  block = block < 6 ? 6 : block > kMaxPatchPixels ? kMaxPatchPixels : block;
  return ConvPlan{ConvPath::kPatches, static_cast<int32_t>(block), 0, 0,
                  static_cast<size_t>(taps * block) * sizeof(float)};
}

// What the helium paths index with 32-bit arithmetic: every tensor under 2^31 bytes (a size the board's memory
// could never hold anyway), so no offset or row distance overflows.
bool fits_32bit(const ConvGeometry& g) {
  const int64_t limit = INT32_MAX / static_cast<int64_t>(sizeof(float));
  return g.N * g.Cin * g.H * g.W <= limit && g.N * g.Cout * g.OH * g.OW <= limit &&
         g.Cout * g.Cg * g.KH * g.KW <= limit && g.H + 2 * g.ph <= limit && g.W + 2 * g.pw <= limit &&
         g.sh * g.OH <= limit && g.sw * g.OW <= limit && g.dh * g.KH <= limit && g.dw * g.KW <= limit;
}

struct Conv {
  ConvGeometry g;
  const float* x;
  const float* w;
  const float* b;
  float* o;
  float lo, hi;
  uint8_t* scratch;
};

// ---- pointwise ------------------------------------------------------------------------------------------------

template <bool Clamp>
void run_pointwise(const Conv& c) {
  const ConvGeometry& g = c.g;
  const int32_t plane = static_cast<int32_t>(g.H * g.W), cout_g = static_cast<int32_t>(g.Cout / g.groups);
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      ChannelGemm m;
      m.w = c.w + grp * cout_g * g.Cg, m.w_row = static_cast<int32_t>(g.Cg);
      m.x = c.x + (n * g.Cin + grp * g.Cg) * plane, m.x_row = plane;
      m.bias = c.b != nullptr ? c.b + grp * cout_g : nullptr;
      m.o = c.o + (n * g.Cout + grp * cout_g) * plane, m.o_row = plane;
      m.channels = cout_g, m.k = static_cast<int32_t>(g.Cg), m.pixels = plane;
      m.lo = c.lo, m.hi = c.hi;
      run_channel_gemm<Clamp>(m);
    }
  }
}

// ---- depthwise ------------------------------------------------------------------------------------------------

template <bool Clamp>
void run_depthwise(const Conv& c, const ConvPlan& plan) {
  const ConvGeometry& g = c.g;
  const BorderedPlane plane{reinterpret_cast<float*>(c.scratch), plan.plane_rows, plan.plane_cols,
                            static_cast<int32_t>(g.ph), static_cast<int32_t>(g.pw)};
  zero_plane(plane, depthwise_slack_floats(static_cast<int32_t>(g.sw)));
  const DepthwiseRows rows{static_cast<int32_t>(g.OH),
                           static_cast<int32_t>(g.OW),
                           static_cast<int32_t>(g.KH),
                           static_cast<int32_t>(g.KW),
                           static_cast<int32_t>(g.sh),
                           static_cast<int32_t>(g.sw),
                           static_cast<int32_t>(g.dh),
                           static_cast<int32_t>(g.dw),
                           c.lo,
                           c.hi};
  const int64_t per_channel = g.Cout / g.Cin, taps = g.KH * g.KW, in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t ch = 0; ch < g.Cin; ++ch) {
      fill_plane(plane, c.x + (n * g.Cin + ch) * in_plane, static_cast<int32_t>(g.H), static_cast<int32_t>(g.W));
      for (int64_t m = 0; m < per_channel; ++m) {
        const int64_t oc = ch * per_channel + m;
        depthwise_rows<Clamp>(plane, rows, c.w + oc * taps, c.b != nullptr ? c.b[oc] : 0.0f,
                              c.o + (n * g.Cout + oc) * out_plane);
      }
    }
  }
}

// ---- lanes ----------------------------------------------------------------------------------------------------

template <bool Clamp>
void run_lanes(const Conv& c, const ConvPlan& plan) {
  const ConvGeometry& g = c.g;
  const LanePlanes planes{reinterpret_cast<float*>(c.scratch), plan.plane_rows, plan.plane_cols,
                          static_cast<int32_t>(g.ph), static_cast<int32_t>(g.pw)};
  zero_lanes(planes);
  const DepthwiseRows rows{static_cast<int32_t>(g.OH),
                           static_cast<int32_t>(g.OW),
                           3,
                           3,
                           static_cast<int32_t>(g.sh),
                           static_cast<int32_t>(g.sw),
                           1,
                           1,
                           c.lo,
                           c.hi};
  const int64_t per_channel = g.Cout / g.Cin, in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  alignas(16) float w4[9 * 4];
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t c0 = 0; c0 < g.Cin; c0 += 4) {
      const int32_t lanes = static_cast<int32_t>(g.Cin - c0 < 4 ? g.Cin - c0 : 4);
      // Lanes past the last channel repeat it, down to its output plane: they store its values again.
      alignas(16) int32_t ch32[4];
      const float* src[4];
      for (int32_t i = 0; i < 4; ++i) {
        ch32[i] = static_cast<int32_t>(c0) + (i < lanes ? i : lanes - 1);
        src[i] = c.x + (n * g.Cin + ch32[i]) * in_plane;
      }
      fill_lanes(planes, src, static_cast<int32_t>(g.H), static_cast<int32_t>(g.W));
      // Lane i's weights and bias for output channel ch[i] * per_channel + m, gathered four lanes at a time.
      const uint32x4_t first = vldrwq_u32(reinterpret_cast<const uint32_t*>(ch32));
      const uint32x4_t w_offsets = vmulq_n_u32(first, static_cast<uint32_t>(per_channel * 9));
      const uint32x4_t b_offsets = vmulq_n_u32(first, static_cast<uint32_t>(per_channel));
      for (int64_t m = 0; m < per_channel; ++m) {
        LaneState st;
        for (int32_t t = 0; t < 9; ++t) {
          vstrwq_f32(w4 + 4 * t, vldrwq_gather_shifted_offset_f32(c.w + m * 9 + t, w_offsets));
        }
        st.bias = c.b != nullptr ? vldrwq_gather_shifted_offset_f32(c.b + m, b_offsets) : vdupq_n_f32(0.0f);
        st.out_offsets = vmulq_n_u32(vsubq_n_u32(first, static_cast<uint32_t>(c0)),
                                     static_cast<uint32_t>(per_channel * out_plane * 4));
        st.lo = c.lo, st.hi = c.hi;
        depthwise3x3_lanes_any<Clamp>(planes, rows, st, w4, c.o + (n * g.Cout + c0 * per_channel + m) * out_plane);
      }
    }
  }
}

// ---- patches --------------------------------------------------------------------------------------------------

// The geometry the patch gather needs, in 32 bits (fits_32bit holds for every call that gets here).
struct Taps {
  int32_t H, W, OW, sh, sw, ph, pw, dh, dw;
  uint32x4_t offsets;  // {0, 1, 2, 3} * sw
};

Taps taps_of(const ConvGeometry& g) {
  return Taps{static_cast<int32_t>(g.H),  static_cast<int32_t>(g.W),
              static_cast<int32_t>(g.OW), static_cast<int32_t>(g.sh),
              static_cast<int32_t>(g.sw), static_cast<int32_t>(g.ph),
              static_cast<int32_t>(g.pw), static_cast<int32_t>(g.dh),
              static_cast<int32_t>(g.dw), vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(g.sw))};
}

// One tap's row of the patch matrix for output pixels [p0, p0 + count) from input plane xc: along each output
// row the run of pixels whose tap lands inside the input is a (strided) copy, the rest zeros.
void gather_tap(const Taps& t, const float* xc, int32_t kh, int32_t kw, int32_t p0, int32_t count, float* dst) {
  int32_t oh = p0 / t.OW, ow = p0 - oh * t.OW;
  for (int32_t done = 0; done < count; ow = 0, ++oh) {
    const int32_t run = t.OW - ow < count - done ? t.OW - ow : count - done;
    float* d = dst + done;
    done += run;
    const int32_t ih = oh * t.sh - t.ph + kh * t.dh;
    if (ih < 0 || ih >= t.H) {
      fill_floats(d, run, 0.0f);
      continue;
    }
    // Output columns [ow, ow + run) read input columns iw0 + j * sw: those before column 0 and from column W on
    // are padding.
    const int32_t iw0 = ow * t.sw - t.pw + kw * t.dw;
    int32_t left = iw0 < 0 ? (t.sw - 1 - iw0) / t.sw : 0;
    if (left > run) left = run;
    const int32_t first = iw0 + left * t.sw;
    int32_t inside = first < t.W ? (t.W - first + t.sw - 1) / t.sw : 0;
    if (inside > run - left) inside = run - left;
    fill_floats(d, left, 0.0f);
    const float* s = xc + ih * t.W + first;
    if (t.sw == 1) {
      copy_floats(d + left, s, inside);
    } else {
      copy_floats_strided(d + left, s, inside, t.sw, t.offsets);
    }
    fill_floats(d + left + inside, run - left - inside, 0.0f);
  }
}

template <bool Clamp>
void run_patches(const Conv& c, const ConvPlan& plan) {
  const ConvGeometry& g = c.g;
  float* patches = reinterpret_cast<float*>(c.scratch);
  const Taps geometry = taps_of(g);
  const int64_t cout_g = g.Cout / g.groups, taps = g.Cg * g.KH * g.KW, out_plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* xg = c.x + (n * g.Cin + grp * g.Cg) * g.H * g.W;
      for (int64_t p0 = 0; p0 < out_plane; p0 += plan.block) {
        const int32_t count = static_cast<int32_t>(out_plane - p0 < plan.block ? out_plane - p0 : plan.block);
        float* row = patches;
        for (int64_t ci = 0; ci < g.Cg; ++ci) {
          const float* xc = xg + ci * g.H * g.W;
          for (int32_t kh = 0; kh < g.KH; ++kh) {
            for (int32_t kw = 0; kw < g.KW; ++kw, row += plan.block) {
              gather_tap(geometry, xc, kh, kw, static_cast<int32_t>(p0), count, row);
            }
          }
        }
        ChannelGemm m;
        m.w = c.w + grp * cout_g * taps, m.w_row = static_cast<int32_t>(taps);
        m.x = patches, m.x_row = plan.block;
        m.bias = c.b != nullptr ? c.b + grp * cout_g : nullptr;
        m.o = c.o + (n * g.Cout + grp * cout_g) * out_plane + p0, m.o_row = static_cast<int32_t>(out_plane);
        m.channels = static_cast<int32_t>(cout_g), m.k = static_cast<int32_t>(taps), m.pixels = count;
        m.lo = c.lo, m.hi = c.hi;
        run_channel_gemm<Clamp>(m);
      }
    }
  }
}

// ---- dispatch -------------------------------------------------------------------------------------------------

template <bool Clamp>
void run(const Conv& c, const ConvPlan& plan) {
  switch (plan.path) {
    case ConvPath::kPointwise: return run_pointwise<Clamp>(c);
    case ConvPath::kLanes: return run_lanes<Clamp>(c, plan);
    case ConvPath::kDepthwise: return run_depthwise<Clamp>(c, plan);
    case ConvPath::kPatches: return run_patches<Clamp>(c, plan);
  }
}

// Whether this library computes the call: Float selected for it, contiguous tensors (other dim orders go to
// portable, which reads strides).
bool computes(uint32_t mask, const Tensor& input, const Tensor& weight, const Tensor& out) {
  return out.scalar_type() == ScalarType::Float && (mask & dtype_bit(ScalarType::Float)) != 0 &&
         input.is_contiguous() && weight.is_contiguous() && out.is_contiguous();
}

// The scratch of either overload (arguments 0-8 are the same, out is the last), or none for calls portable takes.
KernelMemory memory(const KernelArgs& a, uint32_t mask) {
  const size_t out = a.size() - 1;
  if (a.dtype(out) != ScalarType::Float || (mask & dtype_bit(ScalarType::Float)) == 0) return {};
  int64_t lists[3][4];
  ArrayRef<int64_t> refs[3];
  for (size_t l = 0; l < 3; ++l) {
    const size_t n = a.list_size(3 + l);
    if (n > 4) return {};  // refused by the kernel's checks
    for (size_t k = 0; k < n; ++k) lists[l][k] = a.list_item(3 + l, k);
    refs[l] = ArrayRef<int64_t>(lists[l], n);
  }
  ConvGeometry g;
  if (!portable::conv_geometry(a.sizes(0), a.sizes(1), refs[0], refs[1], refs[2], a.to_bool(6), a.to_int(8), g) ||
      !fits_32bit(g)) {
    return {};
  }
  KernelMemory m;
  m.scratch = round16(plan_convolution(g).scratch);
  return m;
}

void convolve(KernelContext& ctx, const char* name, const Tensor& input, const Tensor& weight, const Tensor* bias,
              ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
              int64_t groups, bool clamp, float lo, float hi, Tensor& out) {
  Conv c;
  if (!portable::check_convolution(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, out, c.g)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, fits_32bit(c.g), NotSupported, "%s: a tensor of over 2^31 bytes", name);
  const ConvPlan plan = plan_convolution(c.g);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= plan.scratch, InvalidState,
                     "%s: needs %zu bytes of scratch, was given %zu", name, plan.scratch, ctx.scratch().size());
  c.x = input.const_data_ptr<float>();
  c.w = weight.const_data_ptr<float>();
  c.b = bias != nullptr ? bias->const_data_ptr<float>() : nullptr;
  c.o = out.mutable_data_ptr<float>();
  c.lo = lo, c.hi = hi;
  c.scratch = ctx.scratch().data();
  if (clamp) return run<true>(c, plan);
  run<false>(c, plan);
}

}  // namespace

KernelMemory convolution_memory(const KernelArgs& args) {
  return memory(args, selected_dtypes::convolution_out_helium);
}

KernelMemory convolution_clamp_memory(const KernelArgs& args) {
  return memory(args, selected_dtypes::convolution_clamp_out_helium);
}

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  if (!computes(selected_dtypes::convolution_out_helium, input, weight, out)) {
    return portable::convolution_out(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                     groups, out);
  }
  convolve(ctx, "convolution.out", input, weight, bias, stride, padding, dilation, transposed, groups, false, 0.0f,
           0.0f, out);
}

void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out) {
  if (!computes(selected_dtypes::convolution_clamp_out_helium, input, weight, out)) {
    return portable::convolution_clamp_out(ctx, input, weight, bias, stride, padding, dilation, transposed,
                                           output_padding, groups, min, max, out);
  }
  // exir never fuses a NaN bound (torch.clamp would make every element NaN, not compare-and-select).
  EMBER_KERNEL_CHECK(ctx, min == min && max == max, InvalidArgument,
                     "convolution_clamp.out: bounds [%g, %g] include NaN", min, max);
  convolve(ctx, "convolution_clamp.out", input, weight, bias, stride, padding, dilation, transposed, groups, true,
           static_cast<float>(min), static_cast<float>(max), out);
}

}  // namespace helium
}  // namespace ember
