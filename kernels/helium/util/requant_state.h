// The state of the Helium requantizing kernels (conv2d, linear): kernels/quantized's checks and per-channel
// derivation (util/channel_params.h), stored field by field instead of channel by channel, so four channels'
// values are one vector load. Per channel: the correction added to the raw int8 dot product
// (bias - input_zero_point * sum(weights), when it fits int32), and the three steps of the one requantization
// (RequantSteps in kernels/quantized/util/requantize.h), the right shift negated as VRSHL takes it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/quantized/util/channel_params.h"
#include "runtime/core/error.h"
#include "runtime/kernel/kernel_args.h"

namespace ember {
namespace helium {

struct RequantState {
  quantized::RequantHeader header;  // header.reserved: {channels rounded up to 4, whether every correction fits}
  // Then four int32 arrays of `padded_channels()` entries each: corrections, multipliers, left shifts and
  // negated right shifts (the padding channels repeat the last real one, so a partial vector computes nothing new).

  int32_t padded_channels() const { return header.reserved[0]; }
  bool corrections_fit() const { return header.reserved[1] != 0; }
  const int32_t* corrections() const { return reinterpret_cast<const int32_t*>(this + 1); }
  const int32_t* multipliers() const { return corrections() + padded_channels(); }
  const int32_t* left_shifts() const { return multipliers() + padded_channels(); }
  const int32_t* negated_right_shifts() const { return left_shifts() + padded_channels(); }
};
static_assert(sizeof(RequantState) == 48, "state is planned in 16-byte units");

KernelMemory requant_state_memory(const KernelArgs& args, const quantized::RequantArgs& at);
Error prepare_requant_state(const KernelArgs& args, const quantized::RequantArgs& at, void* state);

// bias[oc] - input_zero_point * sum(weight row oc), exactly: what a channel whose correction does not fit int32
// adds in 64 bits (only a program with extreme biases has one; the vector path then finishes it in scalar code).
int64_t wide_correction(const int8_t* weight_row, int64_t taps, const int32_t* bias, int64_t oc, int32_t zp_in);

}  // namespace helium
}  // namespace ember
