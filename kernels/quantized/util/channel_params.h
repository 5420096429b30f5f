// The prepare step (runtime/kernel/kernel_args.h) of the requantizing kernels, conv2d and linear: everything
// that depends only on their constants and scalar arguments is checked, and derived, once at Method::load, so
// their execute does only the arithmetic (as TFLite Micro's Prepare computes a convolution's per-channel
// multipliers). Derived per output channel: the fixed-point multiplier input_scale * weight_scale[oc] /
// output_scale, the sum of the channel's weights (the zero-point correction), the accumulator's spare bits, and
// the bias. The weights, their scales and the bias must be the program's constant data, which exir's
// quantization lowering always makes them; a program that computes them at run time is refused at load.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/kernel/kernel_args.h"

namespace ember {
namespace quantized {

// The scalars, as validated at load: execute reads them from here, never again from its arguments. `channels` and
// `taps` are the weight's shape at load: execute checks the weight it is given against them (a MoveCall could
// replace the value), so it never reads past the channels prepared. `checked_rows` is set when the call's shapes
// cannot change and were checked at load (util/geometry.h, check_linear_at_load): execute then trusts them.
struct RequantHeader {
  int32_t input_zero_point;
  int32_t output_zero_point;
  int32_t activation_min;
  int32_t activation_max;
  int32_t channels;
  int32_t taps;
  int32_t reserved[2];    // the kernel library's own (kernels/helium: its vector layout)
  int32_t checked_rows;   // > 0: a linear's input rows, checked at load; 0: execute checks its arguments
  int32_t unused[3];
};

struct ChannelParams {
  int32_t multiplier;  // QuantizedMultiplier (util/requantize.h)
  int16_t shift;
  int16_t headroom;    // spare bits above the accumulator's bound (accumulator_headroom)
  int32_t bias;
  int32_t weight_sum;  // |sum| <= 128 * kMaxAccumulatedProducts: fits int32
};
static_assert(sizeof(RequantHeader) == 48 && sizeof(ChannelParams) == 16, "state is planned in 16-byte units");

// Where the shared arguments stand in a kernel's schema (schema/operators.yaml).
struct RequantArgs {
  const char* op;            // for messages: "ember_quantized::conv2d.out"
  size_t weight_dim;         // 4 (OIHW) or 2 ([out, in])
  size_t input_scale, input_zero_point, weight, weight_scales, bias, output_scale, output_zero_point, activation_min,
      activation_max;
};

// The state: a header and one ChannelParams per output channel (weight's first dim).
KernelMemory requant_memory(const KernelArgs& args, const RequantArgs& at);
// Checks the constants and scalars and fills `state` (requant_memory(args, at).state bytes).
Error requant_prepare(const KernelArgs& args, const RequantArgs& at, void* state);

// The two halves of requant_prepare, for a kernel library that keeps the same derivation in another layout
// (kernels/helium stores it per field, four channels to a vector): check_requant_args checks every constant and
// scalar and fills the header; derive_channel then computes channel `oc` (0 <= oc < header.channels).
Error check_requant_args(const KernelArgs& args, const RequantArgs& at, RequantHeader* header);
Error derive_channel(const KernelArgs& args, const RequantArgs& at, const RequantHeader& header, int64_t oc,
                     ChannelParams* out);

// Whether `state` was prepared for a weight of this many output channels and products per output.
inline bool prepared_for(const RequantHeader* state, int64_t channels, int64_t taps) {
  return state != nullptr && state->channels == channels && state->taps == taps;
}

inline const ChannelParams* channel_params(const void* state) {
  return reinterpret_cast<const ChannelParams*>(static_cast<const RequantHeader*>(state) + 1);
}

}  // namespace quantized
}  // namespace ember
