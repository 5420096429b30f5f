#include "kernels/quantized/util/channel_params.h"

#include "kernels/quantized/util/requantize.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"

namespace ember {
namespace quantized {
namespace {

int64_t numel(ArrayRef<int32_t> sizes) {
  int64_t n = 1;
  for (int32_t s : sizes) n *= s;
  return n;
}

}  // namespace

KernelMemory requant_memory(const KernelArgs& args, const RequantArgs& at) {
  const ArrayRef<int32_t> w = args.sizes(at.weight);
  // A weight of another rank is refused by prepare; no state is needed to say so.
  if (w.size() != at.weight_dim || w[0] <= 0) return {sizeof(RequantHeader), 0};
  return {sizeof(RequantHeader) + static_cast<size_t>(w[0]) * sizeof(ChannelParams), 0};
}

Error check_requant_args(const KernelArgs& args, const RequantArgs& at, RequantHeader* header) {
  const char* op = at.op;
  const ArrayRef<int32_t> wsizes = args.sizes(at.weight);
  EMBER_CHECK_OR_RETURN_ERROR(wsizes.size() == at.weight_dim && wsizes[0] > 0, InvalidArgument,
                              "%s: weight must be %zu-d with at least one output channel, got %zu-d", op, at.weight_dim,
                              wsizes.size());
  const int64_t OC = wsizes[0], taps = numel(wsizes) / OC;
  EMBER_CHECK_OR_RETURN_ERROR(args.dtype(at.weight) == ScalarType::Char, InvalidArgument,
                              "%s: weight must be int8, got %s", op, scalar_type_name(args.dtype(at.weight)));
  EMBER_CHECK_OR_RETURN_ERROR(taps <= kMaxAccumulatedProducts, NotSupported,
                              "%s: %lld products per output could overflow the int32 accumulator (at most %lld)", op,
                              static_cast<long long>(taps), static_cast<long long>(kMaxAccumulatedProducts));
  const ArrayRef<int32_t> ssizes = args.sizes(at.weight_scales);
  EMBER_CHECK_OR_RETURN_ERROR(ssizes.size() == 1 && (ssizes[0] == OC || ssizes[0] == 1), InvalidArgument,
                              "%s: weight_scales must have %lld elements (one per output channel) or 1", op,
                              static_cast<long long>(OC));
  EMBER_CHECK_OR_RETURN_ERROR(is_scale_dtype(args.dtype(at.weight_scales)), InvalidArgument,
                              "%s: weight_scales must be float32, got %s", op,
                              scalar_type_name(args.dtype(at.weight_scales)));
  const bool has_bias = args.tag(at.bias) == Tag::Tensor;
  if (has_bias) {
    const ArrayRef<int32_t> bsizes = args.sizes(at.bias);
    EMBER_CHECK_OR_RETURN_ERROR(bsizes.size() == 1 && bsizes[0] == OC, InvalidArgument,
                                "%s: bias must have %lld elements", op, static_cast<long long>(OC));
    EMBER_CHECK_OR_RETURN_ERROR(args.dtype(at.bias) == ScalarType::Int, InvalidArgument,
                                "%s: bias must be int32 (scale input_scale * weight_scale), got %s", op,
                                scalar_type_name(args.dtype(at.bias)));
  }
  // Derived once, so they must not change: constant data, valid now.
  EMBER_CHECK_OR_RETURN_ERROR(args.is_constant(at.weight) && args.is_constant(at.weight_scales) &&
                                  (!has_bias || args.is_constant(at.bias)),
                              NotSupported,
                              "%s: weight, weight_scales and bias must be constants of the program "
                              "(they are folded into per-channel constants at load)",
                              op);
  const double input_scale = args.to_double(at.input_scale), output_scale = args.to_double(at.output_scale);
  EMBER_CHECK_OR_RETURN_ERROR(valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                              "%s: scales must be positive, got input %g and output %g", op, input_scale, output_scale);
  const int64_t zp_in = args.to_int(at.input_zero_point), zp_out = args.to_int(at.output_zero_point);
  const int64_t act_min = args.to_int(at.activation_min), act_max = args.to_int(at.activation_max);
  EMBER_CHECK_OR_RETURN_ERROR(in_int8_range(zp_in) && in_int8_range(zp_out) && in_int8_range(act_min) &&
                                  in_int8_range(act_max) && act_min <= act_max,
                              InvalidArgument,
                              "%s: zero points (%lld, %lld) and activation range [%lld, %lld] must "
                              "be int8 values",
                              op, static_cast<long long>(zp_in), static_cast<long long>(zp_out),
                              static_cast<long long>(act_min), static_cast<long long>(act_max));
  *header = RequantHeader{static_cast<int32_t>(zp_in),
                          static_cast<int32_t>(zp_out),
                          static_cast<int32_t>(act_min),
                          static_cast<int32_t>(act_max),
                          static_cast<int32_t>(OC),
                          static_cast<int32_t>(taps),
                          {0, 0},
                          0,
                          {0, 0, 0}};
  return Error::Ok;
}

Error derive_channel(const KernelArgs& args, const RequantArgs& at, const RequantHeader& header, int64_t oc,
                     ChannelParams* out) {
  const Tensor& scales = *args.tensor(at.weight_scales);
  const int64_t taps = header.taps;
  const double ws = scale_at(scales, scales.numel() == 1 ? 0 : oc);
  const double m = args.to_double(at.input_scale) * ws / args.to_double(at.output_scale);
  QuantizedMultiplier q;
  EMBER_CHECK_OR_RETURN_ERROR(valid_scale(ws) && multiplier_in_range(m) && quantize_multiplier(m, &q), InvalidArgument,
                              "%s: weight scale %g of channel %lld gives no usable "
                              "requantization multiplier",
                              at.op, ws, static_cast<long long>(oc));
  const int8_t* wk = args.tensor(at.weight)->const_data_ptr<int8_t>() + oc * taps;
  // In int32 (|sum| <= 128 * kMaxAccumulatedProducts, which check_requant_args bounds taps by), which vectorizes.
  // Blocks of a fixed count, which gcc's -O2 vectorizes (a size build keeps the one loop).
  int32_t sum = 0;
  int64_t t = 0;
#if !defined(__OPTIMIZE_SIZE__)
  for (; t + 16 <= taps; t += 16) {
    for (int j = 0; j < 16; ++j) sum += wk[t + j];
  }
#endif
  for (; t < taps; ++t) sum += wk[t];
  const int32_t b = args.tag(at.bias) == Tag::Tensor ? args.tensor(at.bias)->const_data_ptr<int32_t>()[oc] : 0;
  *out = ChannelParams{q.multiplier, static_cast<int16_t>(q.shift),
                       static_cast<int16_t>(accumulator_headroom(wk, taps, b)), b, static_cast<int32_t>(sum)};
  return Error::Ok;
}

Error requant_prepare(const KernelArgs& args, const RequantArgs& at, void* state) {
  RequantHeader* header = static_cast<RequantHeader*>(state);
  const Error checked = check_requant_args(args, at, header);
  if (checked != Error::Ok) return checked;
  ChannelParams* channels = reinterpret_cast<ChannelParams*>(header + 1);
  for (int64_t oc = 0; oc < header->channels; ++oc) {
    const Error derived = derive_channel(args, at, *header, oc, &channels[oc]);
    if (derived != Error::Ok) return derived;
  }
  return Error::Ok;
}

}  // namespace quantized
}  // namespace ember
