// ember_quantized::softmax's arithmetic, shared by every library that implements it (kernels/quantized's scalar
// loop, kernels/helium's MVE one), so that all of them, on every target, give the same bits.
//
// softmax(x)_i = e^(x_i - max) / sum_j e^(x_j - max). On int8 input with one scale s, x_i - max = -s * d_i with
// d_i = max_q - q_i an integer in [0, 255], so the exponentials a row can need are 256 numbers fixed by s alone:
// the prepare step tabulates them once, at load, as T[d] = round(e^(-s d) * 2^30) (T[0] = 2^30 exactly). A row is
// then integer work but for one division: its maximum, the int64 sum S of T[d_i], one reciprocal (a fixed-point
// multiplier for 1 / (output_scale * S), from one float division of two 31-bit integers, which IEEE 754 rounds the
// same way everywhere), and per element T[d_i] times that multiplier, rounded, plus the output zero point, saturated
// to int8. The final rounding sends exact ties to even, as PyTorch's quantize does
// (a row of 512 equal values is exactly 0.5 of an output step of 1/256 per element).
//
// The table is built from additions, multiplications and divisions of doubles only, in a file compiled with
// -ffp-contract=off: IEEE 754 rounds each of those correctly on every target (x86-64's SSE2, AArch64, the M55's
// FPU or libgcc's soft float), so without fused multiply-adds the table is the same everywhere. No libm (whose exp
// differs between glibc and newlib).
//
// Accuracy against the reference (float32 dequantize -> softmax -> quantize): the table entries are within half a
// unit of 2^-30 of e^(-s d), and the multiplier within about 2^-23 relative, so an output is off the exact real
// value by far less than an int8 step (at most about 2^-15 of one for a scale of 1/256); it differs from the
// reference's only where the exact value lies within the reference's own float32 error of a rounding boundary
// (tests/kernels/test_quantized_ops.py counts how often).
#pragma once

#include <stdint.h>

#include "kernels/quantized/util/requantize.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace quantized {

// T[0]'s weight: every entry is below 2^31 and a row's sum of n entries needs 30 + log2(n) bits (int64).
constexpr int kSoftmaxTableBits = 30;
constexpr int kSoftmaxTableSize = 256;

struct SoftmaxState {
  int32_t prepared;             // kSoftmaxPrepared once softmax_prepare filled this state
  int32_t output_multiplier;    // 1 / output_scale as a QuantizedMultiplier
  int32_t output_shift;
  int32_t output_zero_point;
  int32_t reserved[4];
  int32_t table[kSoftmaxTableSize];  // round(e^(-input_scale * d) * 2^kSoftmaxTableBits)
};
static_assert(sizeof(SoftmaxState) % 16 == 0, "state is planned in 16-byte units");
constexpr int32_t kSoftmaxPrepared = 0x534d5831;

// T[d] = round(e^(-input_scale * d) * 2^kSoftmaxTableBits) for d in [0, kSoftmaxTableSize), input_scale > 0: what
// the prepare step stores (correctly rounded double operations only: see the top of this file).
void softmax_fill_table(double input_scale, int32_t* table);

// The state's size (the same for every call: the table does not depend on shapes).
KernelMemory softmax_table_memory(const KernelArgs& args);
// Checks softmax.out's arguments (input, input_scale, input_zero_point, dim, output_scale, output_zero_point, out)
// and fills the state: the table and the output's multiplier.
Error softmax_table_prepare(const KernelArgs& args, void* state);

// A call's rows: `outer` blocks of `length` elements `inner` apart (inner = 1: the last dim, rows contiguous).
struct SoftmaxRows {
  int64_t outer, length, inner;
};

// ember_quantized::softmax.out's checks at execute (shapes, dtypes, contiguity, the state prepared), then its rows.
bool plan_softmax(KernelContext& ctx, const Tensor& input, int64_t dim, Tensor& out, SoftmaxRows* rows);

// The multiplier that maps a row's table entries to output steps, T * (1 / (output_scale * sum)), as requantization
// steps (util/requantize.h; the entries have no spare bits, so no lift). `sum` is the row's sum of entries, at
// least T[0] = 2^30 since the maximum is in the row. Integers and one float division. Always left = 0 and right in
// [1, 31] (1 / output_scale < 2^29, checked at load, over a sum of at least 2^30 is below 1/2), which the vector
// kernels rely on.
RequantSteps softmax_row_steps(const SoftmaxState& state, int64_t sum);

// One output element: the table entry times the row's multiplier, ties to even, plus the zero point, saturated:
// apply_requant_steps<true>(entry, steps) + output_zero_point, clamped, written for what softmax_row_steps
// guarantees (no left shift, a right shift in [1, 31]) and for entries and multipliers that are never negative, so a
// core without a vector unit does it in 32-bit steps and one 32x32 -> 64 multiply: the high multiply's nudge is
// always +2^30 and never saturates (both factors are below 2^31), and its result v is below 2^31, so
// floor(v / 2^r) rounded half to even is (v + 2^(r-1) - [floor even]) >> r in unsigned 32 bits.
inline int8_t softmax_one(int32_t entry, const RequantSteps& steps, int32_t output_zero_point) {
  const uint32_t v = static_cast<uint32_t>(
      (static_cast<uint64_t>(static_cast<uint32_t>(entry)) * static_cast<uint32_t>(steps.multiplier) + (1u << 30)) >>
      31);
  const uint32_t r = static_cast<uint32_t>(steps.right);
  const uint32_t even = ((v >> r) & 1u) ^ 1u;
  const int32_t scaled = static_cast<int32_t>((v + (1u << (r - 1)) - even) >> r);
  const int32_t out = scaled + output_zero_point;  // >= -128: scaled is never negative
  return static_cast<int8_t>(out > 127 ? 127 : out);
}

}  // namespace quantized
}  // namespace ember
