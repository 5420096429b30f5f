// Compiled with -ffp-contract=off (kernels/quantized/BUILD.bazel): see softmax_table.h for why the table's double
// arithmetic must not be contracted into fused multiply-adds.
#include "kernels/quantized/util/softmax_table.h"

#include "kernels/portable/util/kernel_util.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"

namespace ember {
namespace quantized {
namespace {

// softmax.out(input, input_scale, input_zero_point, dim, output_scale, output_zero_point, out)
constexpr size_t kInput = 0, kInputScale = 1, kInputZeroPoint = 2, kDim = 3, kOutputScale = 4, kOutputZeroPoint = 5;
constexpr const char* kOp = "ember_quantized::softmax.out";

// e^-s for s >= 0 from correctly rounded double operations only: halve s until it is at most 1/64 (exactly), sum
// the Taylor series there (ten terms leave an error far below double's precision), and square the result back as
// many times. Each squaring doubles the relative error, which stays near 2^-40 even for an input scale of 64.
double exp_negative(double s) {
  double r = s;
  int halvings = 0;
  while (r > 1.0 / 64.0) {
    r *= 0.5;
    ++halvings;
  }
  double e = 1.0;
  for (int k = 10; k >= 1; --k) e = 1.0 - r * e / static_cast<double>(k);
  for (int i = 0; i < halvings; ++i) e = e * e;
  return e;
}

// The bit length of a value (the position of its highest set bit, plus one; 0 for 0): a count of leading zeros,
// one instruction or two on every target here, where a shifting loop took a hundred per row on the M55.
int bit_length(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

}  // namespace

// Successive products of e^-s, each correctly rounded, so T[255]'s relative error is at most 255 double roundings
// (about 2^-45), far below the half unit the final rounding adds.
void softmax_fill_table(double input_scale, int32_t* table) {
  const double base = exp_negative(input_scale);
  double power = static_cast<double>(int64_t{1} << kSoftmaxTableBits);
  for (int d = 0; d < kSoftmaxTableSize; ++d) {
    table[d] = static_cast<int32_t>(power + 0.5);
    power = power * base;
  }
}

KernelMemory softmax_table_memory(const KernelArgs& /*args*/) { return {sizeof(SoftmaxState), 0}; }

Error softmax_table_prepare(const KernelArgs& args, void* state) {
  EMBER_CHECK_OR_RETURN_ERROR(args.dtype(kInput) == ScalarType::Char, InvalidArgument, "%s: input must be int8, got %s",
                              kOp, scalar_type_name(args.dtype(kInput)));
  const int64_t rank = static_cast<int64_t>(args.sizes(kInput).size());
  const int64_t dim = args.to_int(kDim);
  const int64_t dims = rank == 0 ? 1 : rank;
  EMBER_CHECK_OR_RETURN_ERROR(dim >= -dims && dim < dims, InvalidArgument,
                              "%s: dim %lld is out of range for a %lld-d input", kOp, static_cast<long long>(dim),
                              static_cast<long long>(rank));
  const double input_scale = args.to_double(kInputScale), output_scale = args.to_double(kOutputScale);
  EMBER_CHECK_OR_RETURN_ERROR(valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                              "%s: scales must be positive, got input %g and output %g", kOp, input_scale,
                              output_scale);
  const int64_t zp_in = args.to_int(kInputZeroPoint), zp_out = args.to_int(kOutputZeroPoint);
  EMBER_CHECK_OR_RETURN_ERROR(in_int8_range(zp_in) && in_int8_range(zp_out), InvalidArgument,
                              "%s: zero points %lld and %lld must be int8 values", kOp, static_cast<long long>(zp_in),
                              static_cast<long long>(zp_out));
  // An output element is at most 1 / output_scale steps; that must be a usable multiplier.
  QuantizedMultiplier per_unit;
  EMBER_CHECK_OR_RETURN_ERROR(multiplier_in_range(1.0 / output_scale) &&
                                  quantize_multiplier(1.0 / output_scale, &per_unit),
                              InvalidArgument, "%s: output scale %g gives no usable requantization multiplier", kOp,
                              output_scale);
  SoftmaxState* s = static_cast<SoftmaxState*>(state);
  s->output_multiplier = per_unit.multiplier;
  s->output_shift = per_unit.shift;
  s->output_zero_point = static_cast<int32_t>(zp_out);
  for (int32_t& r : s->reserved) r = 0;
  softmax_fill_table(input_scale, s->table);
  s->prepared = kSoftmaxPrepared;
  return Error::Ok;
}

bool plan_softmax(KernelContext& ctx, const Tensor& input, int64_t dim, Tensor& out, SoftmaxRows* rows) {
  const int64_t rank = input.dim();
  const int64_t dims = rank == 0 ? 1 : rank;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, dim >= -dims && dim < dims, InvalidArgument,
                              "%s: dim %lld is out of range for a %lld-d input", kOp, static_cast<long long>(dim),
                              static_cast<long long>(rank));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, portable::fit_output(out, input.sizes()), InvalidArgument,
                              "%s: out must have the input's shape (%d-d)", kOp, static_cast<int>(rank));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                              "%s: only contiguous tensors are supported", kOp);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                              InvalidArgument, "%s: input and out must be int8, got %s and %s", kOp,
                              scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  const SoftmaxState* state = ctx.state<SoftmaxState>();
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, state != nullptr && state->prepared == kSoftmaxPrepared, InvalidState,
                              "%s: called without the table its prepare step builds at load", kOp);
  SoftmaxRows r{1, 1, 1};
  if (rank > 0) {
    const int64_t d = dim < 0 ? dim + rank : dim;
    r.length = input.size(static_cast<int32_t>(d));
    for (int64_t i = 0; i < d; ++i) r.outer *= input.size(static_cast<int32_t>(i));
    for (int64_t i = d + 1; i < rank; ++i) r.inner *= input.size(static_cast<int32_t>(i));
  }
  *rows = r;
  return true;
}

RequantSteps softmax_row_steps(const SoftmaxState& state, int64_t sum) {
  // An empty row has nothing to scale (a row with its maximum in it sums to at least 2^30).
  if (sum <= 0) return RequantSteps{0, 0, 1};
  // The sum to 31 bits, rounded: s in [2^30, 2^31), sum ~= s * 2^dropped (a relative error below 2^-30).
  uint64_t s = static_cast<uint64_t>(sum);
  int dropped = bit_length(s) - 31;
  if (dropped > 0) {
    s = (s + (uint64_t{1} << (dropped - 1))) >> dropped;
    if (s == uint64_t{1} << 31) {
      s >>= 1;
      ++dropped;
    }
  } else if (dropped < 0) {
    s <<= -dropped;  // exact (only for a sum below 2^30, which a row with its maximum in it never has)
  }
  // 1 / (output_scale * sum) = multiplier * 2^(output_shift - 31) / (s * 2^dropped) = ratio * 2^(output_shift - 31 -
  // dropped). The ratio of the two 31-bit integers is one float division: the conversions and the division are each
  // correctly rounded by IEEE 754 on every target (SSE, AArch64, the M4's and M55's FPU: one VDIV where a 64-bit
  // integer division cost the M55 about 70 instructions a row), so the bits agree everywhere; its 24 bits put an
  // output at most about 2^-15 of a step from the exact multiplier's. In [1/2, 2], and scaled by a power of two
  // into Q31 exactly (a float of magnitude 2^30 is an integer).
  const float ratio =
      static_cast<float>(static_cast<uint32_t>(state.output_multiplier)) / static_cast<float>(static_cast<uint32_t>(s));
  int exponent = ratio >= 1.0f ? 30 : 31;
  uint32_t m = static_cast<uint32_t>(ratio * (exponent == 30 ? 1073741824.0f : 2147483648.0f));
  if (m >= uint32_t{1} << 31) {  // the ratio rounded up to 2
    m >>= 1;
    --exponent;
  }
  const int shift = state.output_shift - dropped - exponent;
  // Below 2^-31 per unit every entry (< 2^31) rounds to nothing: the row is all zero points.
  if (m == 0 || shift < -31) return RequantSteps{0, 0, 1};
  return requant_steps(QuantizedMultiplier{static_cast<int32_t>(m), shift}, 0);
}

}  // namespace quantized
}  // namespace ember
