// ember_quantized::conv2d.out on x86-64 (AVX512-VNNI, AVX-VNNI, AVX2) and aarch64 (NEON, with SDOT where the CPU
// has it): int8 NCHW, the tier chosen at run time (int8/level.h), the path (GEMM over gathered panels, or depthwise
// over bordered planes) decided from shapes (int8/conv.h), the weights packed for the tier once, at load. Same
// checks, messages and bits as kernels/quantized/op_conv2d.cc, which takes every call this one cannot: another CPU,
// a shape the checks refuse, or a call without the planned scratch.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/int8/conv.h"
#include "kernels/optimized/int8/panel.h"
#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace optimized {
namespace {

// conv2d.out(input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding, dilation, groups,
//            output_scale, output_zero_point, activation_min, activation_max, out)
constexpr quantized::RequantArgs kArgs = {"ember_quantized::conv2d.out", 4, 1, 2, 3, 4, 5, 10, 11, 12, 13};

Int8ConvShape shape_of(const quantized::Conv2dGeometry& g) {
  Int8ConvShape s{};
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  s.C = i32(g.C), s.H = i32(g.H), s.W = i32(g.W), s.OC = i32(g.OC), s.Cg = i32(g.Cg), s.KH = i32(g.KH);
  s.KW = i32(g.KW), s.OH = i32(g.OH), s.OW = i32(g.OW), s.sh = i32(g.sh), s.sw = i32(g.sw), s.ph = i32(g.ph);
  s.pw = i32(g.pw), s.dh = i32(g.dh), s.dw = i32(g.dw), s.groups = i32(g.groups);
  return s;
}

// What every call of one instruction shares.
struct ConvCall {
  const Int8ConvShape& s;
  const Int8ConvPlan& plan;
  const TierKernels& k;
  const quantized::RequantHeader& q;
  const RowFinish* finish;
  const uint8_t* weights;
  uint8_t* scratch;
};

// The flat outputs of one panel (pixels [p0, p0 + n) of the bordered width) into the output planes: the columns
// past the output's are dropped.
void copy_flat(const Int8ConvShape& s, const Int8ConvPlan& p, const int8_t* staging, int32_t stride, int32_t p0,
               int32_t n, int32_t channels, int8_t* out) {
  const int32_t cols = p.plane_cols, plane = s.OH * s.OW;
  for (int32_t c = 0; c < channels; ++c) {
    const int8_t* src = staging + static_cast<size_t>(c) * stride;
    int8_t* dst = out + static_cast<size_t>(c) * plane;
    for (int32_t i = 0; i < n;) {
      const int32_t f = p0 + i, oh = f / cols, ow = f % cols;
      const int32_t run = cols - ow < n - i ? cols - ow : n - i;
      if (ow < s.OW) memcpy(dst + oh * s.OW + ow, src + i, static_cast<size_t>(run < s.OW - ow ? run : s.OW - ow));
      i += run;
    }
  }
}

void run_gemm(const ConvCall& c, const int8_t* x, int8_t* o) {
  const Int8ConvShape& s = c.s;
  const Int8ConvPlan& p = c.plan;
  const int32_t ocg = s.OC / s.groups, P = s.OH * s.OW, step = p.panel_vectors * p.tile.lanes;
  const bool flat = p.source == GemmSource::kFlat;
  uint8_t* panel = c.scratch;
  int8_t* rows = reinterpret_cast<int8_t*>(panel + p.panel_bytes);
  int8_t* planes = rows + p.rows_bytes;
  int8_t* staging = planes + p.plane_bytes;
  GemmTask t{};
  t.k_groups = p.k_groups;
  t.rows = ocg;
  t.zero_point_plus_offset = c.q.input_zero_point + p.tile.offset;
  t.range = output_range(c.q);
  t.out_stride = flat ? step : P;
  t.panel = panel;
  for (int32_t grp = 0; grp < s.groups; ++grp) {
    const int8_t* xg = x + static_cast<size_t>(grp) * s.Cg * s.H * s.W;
    int8_t* og = o + static_cast<size_t>(grp) * ocg * P;
    if (flat) {
      border_planes(s, p, xg, c.q.input_zero_point, planes);
      xg = planes;
    }
    t.weights =
        reinterpret_cast<const int8_t*>(c.weights) + static_cast<size_t>(grp) * p.blocks * p.k_groups * p.tile.rows * 4;
    t.finish = c.finish + grp * ocg;
    t.params = quantized::channel_params(&c.q) + grp * ocg;
    for (int32_t p0 = 0; p0 < p.pixels; p0 += step) {
      t.pixels = p.pixels - p0 < step ? p.pixels - p0 : step;
      t.vectors = (t.pixels + p.tile.lanes - 1) / p.tile.lanes;
      gather_panel(s, p, xg, c.q.input_zero_point, p0, t.pixels, panel, rows);
      t.out = flat ? staging : og + p0;
      c.k.gemm(t);
      if (flat) copy_flat(s, p, staging, step, p0, t.pixels, ocg, og);
    }
  }
}

void run_depthwise(const ConvCall& c, const int8_t* x, int8_t* o) {
  const Int8ConvShape& s = c.s;
  const Int8ConvPlan& p = c.plan;
  const int32_t multiplier = s.OC / s.C;
  DepthwiseTask t{};
  t.H = s.H, t.W = s.W, t.ph = s.ph, t.pw = s.pw, t.zero_point = c.q.input_zero_point;
  t.OH = s.OH, t.OW = s.OW, t.sh = s.sh, t.sw = s.sw, t.dh = s.dh, t.dw = s.dw, t.KH = s.KH;
  t.kw_groups = p.kw_groups, t.group_step = p.group_step, t.window_rows = p.window_rows;
  t.window_pitch = p.window_pitch, t.plane_cols = p.plane_cols;
  t.outputs = multiplier;
  t.zero_point_plus_offset = c.q.input_zero_point + p.tile.offset;
  t.range = output_range(c.q);
  t.plane = c.scratch;
  t.plane_elements = p.plane_bytes / (p.tile.group == 2 ? 2 : 1);
  t.windows = c.scratch + p.plane_bytes;
  const quantized::ChannelParams* params = quantized::channel_params(&c.q);
  for (int32_t ch = 0; ch < s.C; ++ch) {
    const int32_t oc = ch * multiplier;
    t.x = x + static_cast<size_t>(ch) * s.H * s.W;
    t.weights = c.weights + static_cast<size_t>(oc) * s.KH * p.kw_groups * 4;
    t.finish = c.finish + oc;
    t.params = params + oc;
    t.out = o + static_cast<size_t>(oc) * s.OH * s.OW;
    c.k.depthwise(t);
  }
}

}  // namespace

KernelMemory quantized_conv2d_memory(const KernelArgs& args) { return int8_conv_memory(args, kArgs); }
Error quantized_conv2d_prepare(const KernelArgs& args, void* state) { return int8_conv_prepare(args, kArgs, state); }

void quantized_conv2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                          const Tensor& weight, const Tensor& weight_scales, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          int64_t groups, double output_scale, int64_t output_zero_point, int64_t activation_min,
                          int64_t activation_max, Tensor& out) {
  auto scalar = [&]() {
    quantized::conv2d_out(ctx, input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding,
                          dilation, groups, output_scale, output_zero_point, activation_min, activation_max, out);
  };
  constexpr uint32_t kMask = selected_dtypes::quantized_conv2d_out_optimized & dtype_bit(ScalarType::Char);
  if (!(kMask & dtype_bit(ScalarType::Char))) return scalar();
  // The checks (shared with kernels/quantized) include that the state was prepared for this weight.
  quantized::Conv2dGeometry geo;
  if (!quantized::conv2d_geometry(ctx, input, weight, stride, padding, dilation, groups, out, &geo)) return;
  const quantized::RequantHeader& q = *ctx.state<quantized::RequantHeader>();
  const Int8ConvHeader& h = *int8_conv_header(&q);
  // A call whose weights or strides differ from the prepared ones (a direct caller's) goes to the scalar kernel, and
  // one whose sizes do is planned only where they fit the plan's arithmetic.
  if (h.path == static_cast<int32_t>(Int8ConvPath::kScalar) ||
      !int8_conv_matches(h, geo.groups, geo.Cg, geo.KH, geo.KW, geo.sw, geo.dw) ||
      !int8_conv_plannable(geo.H, geo.W, geo.ph, geo.pw, geo.OH, geo.OW)) {
    return scalar();
  }
  const Int8ConvShape s = shape_of(geo);
  const Int8ConvPlan plan = plan_int8_conv(s, static_cast<Int8Level>(h.level));
  const TierKernels* k = tier_kernels(plan.level);
  // The state's packing is what the tier reads: a path other than the one prepared is the scalar kernel's.
  if (static_cast<int32_t>(plan.path) != h.path || k == nullptr || ctx.scratch().size() < plan.scratch) {
    return scalar();
  }
  const ConvCall c{
      s, plan, *k, q, row_finish(&q), reinterpret_cast<const uint8_t*>(&q) + h.weights_offset, ctx.scratch().data()};
  const int8_t* x = input.const_data_ptr<int8_t>();
  int8_t* o = out.mutable_data_ptr<int8_t>();
  const size_t in_image = static_cast<size_t>(s.C) * s.H * s.W, out_image = static_cast<size_t>(s.OC) * s.OH * s.OW;
  for (int64_t n = 0; n < geo.N; ++n) {
    if (plan.path == Int8ConvPath::kDepthwise) {
      run_depthwise(c, x + n * in_image, o + n * out_image);
    } else {
      run_gemm(c, x + n * in_image, o + n * out_image);
    }
  }
}

}  // namespace optimized
}  // namespace ember
