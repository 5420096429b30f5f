// ember_quantized::conv2d.out on MVE, NCHW int8 (the layout the program's tensors have). Two paths, chosen by
// plan_conv (util/conv_plan.h) from shapes alone: planar (depthwise and few-channel layers, util/conv_planar.cc)
// and patches (util/conv_patches.cc). Same checks, messages and bits as kernels/quantized/op_conv2d.cc
// (util/geometry.h, util/requantize.h).
#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/conv_call.h"
#include "kernels/helium/util/conv_plan.h"
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

ConvShape shape_of(const quantized::Conv2dGeometry& g) {
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  return ConvShape{i32(g.C),  i32(g.H),  i32(g.W),  i32(g.OC), i32(g.Cg), i32(g.KH), i32(g.KW), i32(g.OH),
                   i32(g.OW), i32(g.sh), i32(g.sw), i32(g.ph), i32(g.pw), i32(g.dh), i32(g.dw), i32(g.groups)};
}

// The plan for a call as the program states it, or scratch 0 when its shapes are ones the kernel refuses.
ConvPlan plan_from_args(const KernelArgs& args) {
  const ConvPlan none{ConvPath::kPatches, 0, 0, 0, false, 0, 0, 0, 0};
  const ArrayRef<int32_t> in = args.sizes(0), w = args.sizes(3);
  if (in.size() != 4 || w.size() != 4) return none;
  const size_t ns = args.list_size(6), np = args.list_size(7), nd = args.list_size(8);
  if (ns < 1 || ns > 2 || np < 1 || np > 2 || nd < 1 || nd > 2) return none;
  const int64_t sh = args.list_item(6, 0), sw = args.list_item(6, ns - 1), ph = args.list_item(7, 0),
                pw = args.list_item(7, np - 1), dh = args.list_item(8, 0), dw = args.list_item(8, nd - 1),
                groups = args.to_int(9);
  auto within = [](int64_t v, int64_t lo) { return v >= lo && v <= INT32_MAX; };
  constexpr int64_t kMax = quantized::kMaxAccumulatedProducts;
  if (!within(sh, 1) || !within(sw, 1) || !within(dh, 1) || !within(dw, 1) || !within(ph, 0) || !within(pw, 0) ||
      !within(groups, 1) || in[1] <= 0 || w[0] <= 0 || w[1] <= 0 || w[2] <= 0 || w[3] <= 0 ||
      int64_t{w[1]} * w[2] * w[3] > kMax) {
    return none;
  }
  const int64_t OH = (in[2] + 2 * ph - dh * (w[2] - 1) - 1) / sh + 1;
  const int64_t OW = (in[3] + 2 * pw - dw * (w[3] - 1) - 1) / sw + 1;
  if (OH <= 0 || OW <= 0 || OH > INT32_MAX || OW > INT32_MAX) return none;
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  return plan_conv(ConvShape{in[1], in[2], in[3], w[0], w[1], w[2], w[3], i32(OH), i32(OW), i32(sh), i32(sw), i32(ph),
                             i32(pw), i32(dh), i32(dw), i32(groups)});
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
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* bias, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, double /*output_scale*/,
                int64_t /*output_zero_point*/, int64_t /*activation_min*/, int64_t /*activation_max*/, Tensor& out) {
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
      const ConvCall k{x + n * geo.C * geo.H * geo.W,
                       weight.const_data_ptr<int8_t>(),
                       bias != nullptr ? bias->const_data_ptr<int32_t>() : nullptr,
                       o + n * geo.OC * geo.OH * geo.OW,
                       ctx.state<RequantState>(),
                       shape,
                       ctx.scratch().data()};
      if (plan.path == ConvPath::kPlanar) {
        run_planar(k, plan);
      } else {
        run_patches(k, plan);
      }
    }
  });
}

}  // namespace helium
}  // namespace ember
