// The shape checks of the requantizing kernels, shared by every library that implements them (kernels/quantized's
// scalar loops and kernels/helium's MVE ones), so the same call is refused with the same message whichever
// library a build registers. Each returns false after recording the error on `ctx`.
#pragma once

#include <stdint.h>

#include "kernels/quantized/util/broadcast_runs.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/requantize.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace quantized {

struct Conv2dGeometry {
  int64_t N, C, H, W;        // input, NCHW
  int64_t OC, Cg, KH, KW;    // weight, OIHW (Cg = input channels per group)
  int64_t OH, OW;            // output plane
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t groups;
};

// ember_quantized::conv2d.out's arguments: shapes, strides and padding, contiguous int8 tensors, a state its
// prepare step filled for this weight. Resizes `out` where it is bounded-dynamic.
bool conv2d_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, ArrayRef<int64_t> stride,
                     ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, Tensor& out,
                     Conv2dGeometry* g);

struct LinearGeometry {
  int64_t rows;  // the product of the input's leading dims
  int64_t IC, OC;
};

// ember_quantized::linear.out's arguments, as conv2d_geometry.
bool linear_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, Tensor& out,
                     LinearGeometry* g);

// In linear's prepare step, after the header is filled: when the call's shapes cannot change
// (KernelArgs::shapes_fixed), linear_geometry's checks run here, once, and the header records the rows, so a
// small layer's execute is its arithmetic alone. A call that fails them fails Method::load with their message.
Error check_linear_at_load(const KernelArgs& args, RequantHeader* header);

// execute's geometry: what check_linear_at_load recorded, else linear_geometry's checks on the arguments.
inline bool linear_call_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, Tensor& out,
                                 LinearGeometry* g) {
  const RequantHeader* checked = ctx.state<RequantHeader>();
  if (checked != nullptr && checked->checked_rows > 0) {
    *g = LinearGeometry{checked->checked_rows, checked->taps, checked->channels};
    return true;
  }
  return linear_geometry(ctx, input, weight, out, g);
}

// quantize_per_tensor.out's checks (defined in op_quantize.cc, beside the dtype rules they use).
bool check_quantize_per_tensor(KernelContext& ctx, const Tensor& input, double scale, int64_t quant_min,
                               int64_t quant_max, int64_t dtype, Tensor& out);

// ember_quantized::add.out: each input is lifted by 2^kAddLiftBits and brought to a common scale (the larger input
// scale times 2, so both input multipliers are <= 0.5), the sum then requantized to the output scale. The plan is
// what every library computes with.
constexpr int kAddLiftBits = 20;

struct AddPlan {
  RequantSteps self, other, out;
  int32_t zp_self, zp_other, zp_out, activation_min, activation_max;
};

// ember_quantized::add.out's checks (same shapes, contiguous int8 tensors, scales and zero points), then its plan.
bool plan_add(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
              double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
              int64_t activation_min, int64_t activation_max, Tensor& out, AddPlan* plan);

// One element of the add, as the plan says (the scalar definition the vector kernels match).
inline int8_t add_one(int32_t a, int32_t b, const AddPlan& p) {
  const int32_t va = apply_requant_steps((a - p.zp_self) * (1 << kAddLiftBits), p.self);
  const int32_t vb = apply_requant_steps((b - p.zp_other) * (1 << kAddLiftBits), p.other);
  return clamp_to_int8(int64_t{apply_requant_steps(va + vb, p.out)} + p.zp_out, p.activation_min, p.activation_max);
}

// ember_quantized::mul.out: the product of the centered inputs, (a - zp_self) * (b - zp_other), is exact in int32
// (|.| <= 255 * 255) and carries scale self_scale * other_scale, so one requantization by
// self_scale * other_scale / output_scale brings it to the output, lifted into the product's spare bits. The inputs
// broadcast as PyTorch's mul does (`runs`). The plan is what every library computes with.
struct MulPlan {
  RequantSteps steps;
  int32_t zp_self, zp_other, zp_out, activation_min, activation_max;
  BroadcastRuns runs;
};

// ember_quantized::mul.out's checks (shapes that broadcast, out of their broadcast shape, contiguous int8 tensors,
// scales and zero points), then its plan.
bool plan_mul(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
              double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
              int64_t activation_min, int64_t activation_max, Tensor& out, MulPlan* plan);

// One element of the mul, as the plan says (the scalar definition the vector kernels match).
inline int8_t mul_one(int32_t a, int32_t b, const MulPlan& p) {
  const int32_t product = (a - p.zp_self) * (b - p.zp_other);
  return clamp_to_int8(int64_t{apply_requant_steps(product, p.steps)} + p.zp_out, p.activation_min, p.activation_max);
}

// ember_quantized::adaptive_avg_pool2d.out. Output cell (i, j) averages rows [window_start(i, H, OH),
// window_end(i, H, OH)) and columns likewise (PyTorch's rule); along a dim windows are h_short or h_short + 1 long,
// so four multipliers cover them all: steps[a][b] for windows of (h_short + a) x (w_short + b) elements.
inline int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

struct PoolPlan {
  int64_t H, W, OH, OW;
  int64_t h_short, w_short;
  RequantSteps steps[2][2];
  int32_t zp_in, zp_out;
};

// The pool's checks (rank, sizes, contiguous int8, scales and zero points), then its plan.
bool plan_adaptive_avg_pool(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                            ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                            Tensor& out, PoolPlan* plan);

}  // namespace quantized
}  // namespace ember
