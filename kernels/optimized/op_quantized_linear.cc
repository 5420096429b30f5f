// ember_quantized::linear.out on x86-64 and aarch64: each input row against every weight row by the tier's dot
// product (int8/tier_kernels.h: VPDPBUSD, VPMADDWD, SDOT or SMULL), then kernels/quantized's requantization of each
// output from the same int64 accumulator, so the bits are the scalar kernel's. The state is kernels/quantized's
// (nothing is packed: the rows are read in place); calls on other CPUs, or without the planned scratch, go to
// kernels/quantized/op_linear.cc.
#include "ember/selected_dtypes.h"
#include "kernels/optimized/int8/level.h"
#include "kernels/optimized/int8/tier_kernels.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace optimized {
namespace {

// Scratch: the input row offset by 128 (x86 dot tiers), then one int32 sum per output feature.
size_t row_bytes(int64_t in_features) { return static_cast<size_t>((in_features + 15) & ~int64_t{15}); }
size_t scratch_bytes(int64_t in_features, int64_t out_features) {
  return row_bytes(in_features) + static_cast<size_t>(out_features) * 4;
}

}  // namespace

KernelMemory quantized_linear_memory(const KernelArgs& args) {
  KernelMemory m = quantized::linear_memory(args);
  const ArrayRef<int32_t> x = args.sizes(0), w = args.sizes(3);
  if (x.size() >= 1 && w.size() == 2 && w[0] > 0 && w[1] > 0)
    m.scratch = (scratch_bytes(w[1], w[0]) + 15) & ~size_t{15};
  return m;
}

Error quantized_linear_prepare(const KernelArgs& args, void* state) { return quantized::linear_prepare(args, state); }

void quantized_linear_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                          const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, double output_scale,
                          int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out) {
  auto scalar = [&]() {
    quantized::linear_out(ctx, input, input_scale, input_zero_point, weight, weight_scales, bias, output_scale,
                          output_zero_point, activation_min, activation_max, out);
  };
  constexpr uint32_t kMask = selected_dtypes::quantized_linear_out_optimized & dtype_bit(ScalarType::Char);
  const Int8Level level = int8_level();
  const TierKernels* k = tier_kernels(level);
  if (!(kMask & dtype_bit(ScalarType::Char)) || k == nullptr) return scalar();
  quantized::LinearGeometry geo;
  if (!quantized::linear_call_geometry(ctx, input, weight, out, &geo)) return;
  const int64_t IC = geo.IC, OC = geo.OC;
  if (ctx.scratch().size() < scratch_bytes(IC, OC)) return scalar();
  const quantized::RequantHeader& q = *ctx.state<quantized::RequantHeader>();
  const quantized::ChannelParams* channels = quantized::channel_params(&q);
  const int32_t offset = int8_tile(level).offset;
  const int8_t* x = input.const_data_ptr<int8_t>();
  const int8_t* w = weight.const_data_ptr<int8_t>();
  int8_t* o = out.mutable_data_ptr<int8_t>();
  uint8_t* row = ctx.scratch().data();
  int32_t* sums = reinterpret_cast<int32_t*>(row + row_bytes(IC));
  const int32_t zp_offset = q.input_zero_point + offset;
  for (int64_t r = 0; r < geo.rows; ++r) {
    const int8_t* xr = x + r * IC;
    const uint8_t* xt = reinterpret_cast<const uint8_t*>(xr);
    if (offset != 0) {
      for (int64_t i = 0; i < IC; ++i) row[i] = static_cast<uint8_t>(xr[i] ^ 0x80);
      xt = row;
    }
    k->dot_rows(xt, w, static_cast<int32_t>(IC), static_cast<int32_t>(OC), sums);
    for (int64_t oc = 0; oc < OC; ++oc) {
      const quantized::ChannelParams& c = channels[oc];
      const int64_t correction = int64_t{c.bias} - int64_t{zp_offset} * c.weight_sum;
      o[r * OC + oc] = quantized::requantize(quantized::saturate_to_int32(sums[oc] + correction),
                                             quantized::QuantizedMultiplier{c.multiplier, c.shift}, c.headroom,
                                             q.output_zero_point, q.activation_min, q.activation_max);
    }
  }
}

}  // namespace optimized
}  // namespace ember
