#include "kernels/helium/util/requant_state.h"

#include "kernels/quantized/util/requantize.h"
#include "runtime/core/result.h"

namespace ember {
namespace helium {

using quantized::ChannelParams;
using quantized::RequantArgs;

namespace {

int32_t round_up4(int64_t n) { return static_cast<int32_t>((n + 3) & ~int64_t{3}); }

}  // namespace

KernelMemory requant_state_memory(const KernelArgs& args, const RequantArgs& at) {
  const ArrayRef<int32_t> w = args.sizes(at.weight);
  // A weight of another rank is refused by prepare; no state is needed to say so.
  if (w.size() != at.weight_dim || w[0] <= 0) return {sizeof(RequantState), 0};
  return {sizeof(RequantState) + static_cast<size_t>(round_up4(w[0])) * 4 * sizeof(int32_t), 0};
}

Error prepare_requant_state(const KernelArgs& args, const RequantArgs& at, void* state) {
  RequantState* s = static_cast<RequantState*>(state);
  const Error checked = quantized::check_requant_args(args, at, &s->header);
  if (checked != Error::Ok) return checked;
  const int64_t OC = s->header.channels;
  const int32_t padded = round_up4(OC);
  s->header.reserved[0] = padded;
  int32_t* corrections = reinterpret_cast<int32_t*>(s + 1);
  int32_t* multipliers = corrections + padded;
  int32_t* left = multipliers + padded;
  int32_t* negated_right = left + padded;
  bool all_fit = true;
  for (int64_t oc = 0; oc < padded; ++oc) {
    // Padding lanes repeat the last channel: finite, valid values the stores then leave unwritten.
    const int64_t c = oc < OC ? oc : OC - 1;
    ChannelParams p;
    const Error derived = quantized::derive_channel(args, at, s->header, c, &p);
    if (derived != Error::Ok) return derived;
    const int64_t correction = int64_t{p.bias} - int64_t{s->header.input_zero_point} * p.weight_sum;
    all_fit = all_fit && correction >= INT32_MIN && correction <= INT32_MAX;
    const quantized::RequantSteps steps =
        quantized::requant_steps(quantized::QuantizedMultiplier{p.multiplier, p.shift}, p.headroom);
    corrections[oc] = quantized::saturate_to_int32(correction);
    multipliers[oc] = steps.multiplier;
    left[oc] = steps.left;
    negated_right[oc] = -steps.right;
  }
  s->header.reserved[1] = all_fit ? 1 : 0;
  return Error::Ok;
}

int64_t wide_correction(const int8_t* weight_row, int64_t taps, const int32_t* bias, int64_t oc, int32_t zp_in) {
  int64_t sum = 0;
  for (int64_t t = 0; t < taps; ++t) sum += weight_row[t];
  return (bias != nullptr ? int64_t{bias[oc]} : 0) - int64_t{zp_in} * sum;
}

}  // namespace helium
}  // namespace ember
