// aten::convolution.out and ember::convolution_clamp.out for Float on MVE, contiguous NCHW (other dim orders and
// dtypes go to portable, which reads strides). Three paths, chosen by plan_convolution from shapes alone so that
// the memory function (which sees only the program) and the kernel agree on the scratch:
//   pointwise  1x1, unit stride, no padding: the channel GEMM (util/channel_gemm_f32.h) on the input planes in
//              place, no scratch;
//   depthwise  one input channel per group: each channel copied into a zero-bordered plane, its output rows
//              swept four columns per vector (util/depthwise_f32.h);
//   patches    everything else: the taps of a block of output pixels gathered into a K x pixels matrix (zeros
//              where they fall in the padding), then the channel GEMM on it.
// convolution_clamp clamps each output where it is written, with the scalar kernels' comparisons (NaN stays NaN).
// The argument checks and their messages are portable's (util/conv_util.h).
#include <stddef.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/channel_gemm_f32.h"
#include "kernels/helium/util/depthwise_f32.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/conv_util.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace helium {
namespace {

using portable::ConvGeometry;

enum class ConvPath { kPointwise, kDepthwise, kPatches };

struct ConvPlan {
  ConvPath path;
  int32_t block;        // patches: output pixels gathered per block (the patch matrix's row length)
  int32_t plane_rows;   // depthwise: the bordered plane
  int32_t plane_cols;
  size_t scratch;       // bytes
};

// The patch matrix is kept to about this many floats where the taps allow (a block is at least one channel
// block's six pixels); up to this many pixels per block, so runs along output rows are long.
constexpr int64_t kPatchFloats = 8192;
constexpr int64_t kMaxPatchPixels = 96;
// A bordered plane larger than this is not worth its scratch: such layers take the patches path.
constexpr int64_t kMaxPlaneFloats = 16384;

bool is_depthwise(const ConvGeometry& g) { return g.Cg == 1 && g.groups == g.Cin && g.groups > 1; }
bool is_pointwise(const ConvGeometry& g) {
  return g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

ConvPlan plan_convolution(const ConvGeometry& g) {
  if (is_pointwise(g)) return ConvPlan{ConvPath::kPointwise, 0, 0, 0, 0};
  if (is_depthwise(g)) {
    const int64_t rows = g.H + 2 * g.ph, cols = g.W + 2 * g.pw;
    const int64_t floats = rows * cols + depthwise_slack_floats(static_cast<int32_t>(g.sw < 64 ? g.sw : 64));
    if (g.sw < 64 && rows <= kMaxPlaneFloats && cols <= kMaxPlaneFloats && floats <= kMaxPlaneFloats) {
      return ConvPlan{ConvPath::kDepthwise, 0, static_cast<int32_t>(rows), static_cast<int32_t>(cols),
                      static_cast<size_t>(floats) * sizeof(float)};
    }
  }
  const int64_t taps = g.Cg * g.KH * g.KW;
  int64_t block = taps > 0 ? kPatchFloats / taps / 6 * 6 : kMaxPatchPixels;
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
  const DepthwiseRows rows{static_cast<int32_t>(g.OH), static_cast<int32_t>(g.OW), static_cast<int32_t>(g.KH),
                           static_cast<int32_t>(g.KW), static_cast<int32_t>(g.sh), static_cast<int32_t>(g.sw),
                           static_cast<int32_t>(g.dh), static_cast<int32_t>(g.dw), c.lo, c.hi};
  const int64_t per_channel = g.Cout / g.Cin, taps = g.KH * g.KW, in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t ch = 0; ch < g.Cin; ++ch) {
      fill_plane(plane, c.x + (n * g.Cin + ch) * in_plane, static_cast<int32_t>(g.H), static_cast<int32_t>(g.W));
      for (int64_t m = 0; m < per_channel; ++m) {
        const int64_t oc = ch * per_channel + m;
        depthwise_channel<Clamp>(plane, rows, c.w + oc * taps, c.b != nullptr ? c.b[oc] : 0.0f,
                                 c.o + (n * g.Cout + oc) * out_plane);
      }
    }
  }
}

// ---- patches --------------------------------------------------------------------------------------------------

inline void zero_floats(float* d, int32_t n) {
  for (; n > 0; n -= 4, d += 4) vstrwq_p_f32(d, vdupq_n_f32(0.0f), vctp32q(static_cast<uint32_t>(n)));
}

// n inputs from `s`, `stride` floats apart, to d.
inline void copy_strided(float* d, const float* s, int32_t n, int32_t stride) {
  if (stride == 1) {
    for (; n > 0; n -= 4, d += 4, s += 4) {
      const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n));
      vstrwq_p_f32(d, vldrwq_z_f32(s, m), m);
    }
    return;
  }
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(stride));
  for (; n > 0; n -= 4, d += 4, s += 4 * stride) {
    const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n));
    vstrwq_p_f32(d, vldrwq_gather_shifted_offset_z_f32(s, offsets, m), m);
  }
}

// One tap's row of the patch matrix for output pixels [p0, p0 + count) of group `grp`'s input: along each output
// row the run of pixels whose tap lands inside the input is a strided copy, the rest zeros.
void gather_tap(const Conv& c, const float* xg, int64_t ci, int64_t kh, int64_t kw, int64_t p0, int32_t count,
                float* dst) {
  const ConvGeometry& g = c.g;
  int64_t oh = p0 / g.OW, ow = p0 % g.OW;
  for (int32_t done = 0; done < count;) {
    const int32_t run = static_cast<int32_t>(g.OW - ow < count - done ? g.OW - ow : count - done);
    float* d = dst + done;
    const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
    if (ih < 0 || ih >= g.H) {
      zero_floats(d, run);
    } else {
      // Output columns [ow, ow + run) read input columns iw0 + j * sw: those before column 0 and from column W on
      // are padding.
      const int64_t iw0 = ow * g.sw - g.pw + kw * g.dw;
      int64_t left = iw0 < 0 ? (-iw0 + g.sw - 1) / g.sw : 0;
      if (left > run) left = run;
      int64_t inside = iw0 + left * g.sw < g.W ? (g.W - (iw0 + left * g.sw) + g.sw - 1) / g.sw : 0;
      if (inside > run - left) inside = run - left;
      zero_floats(d, static_cast<int32_t>(left));
      copy_strided(d + left, xg + (ci * g.H + ih) * g.W + iw0 + left * g.sw, static_cast<int32_t>(inside),
                   static_cast<int32_t>(g.sw));
      zero_floats(d + left + inside, static_cast<int32_t>(run - left - inside));
    }
    done += run;
    ow = 0;
    ++oh;
  }
}

template <bool Clamp>
void run_patches(const Conv& c, const ConvPlan& plan) {
  const ConvGeometry& g = c.g;
  float* patches = reinterpret_cast<float*>(c.scratch);
  const int64_t cout_g = g.Cout / g.groups, taps = g.Cg * g.KH * g.KW, out_plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* xg = c.x + (n * g.Cin + grp * g.Cg) * g.H * g.W;
      for (int64_t p0 = 0; p0 < out_plane; p0 += plan.block) {
        const int32_t count = static_cast<int32_t>(out_plane - p0 < plan.block ? out_plane - p0 : plan.block);
        float* row = patches;
        for (int64_t ci = 0; ci < g.Cg; ++ci) {
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            for (int64_t kw = 0; kw < g.KW; ++kw, row += plan.block) gather_tap(c, xg, ci, kh, kw, p0, count, row);
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
  if (!portable::check_convolution(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, out,
                                   c.g)) {
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
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                     bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  if (!computes(selected_dtypes::convolution_out_helium, input, weight, out)) {
    return portable::convolution_out(ctx, input, weight, bias, stride, padding, dilation, transposed,
                                     output_padding, groups, out);
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
