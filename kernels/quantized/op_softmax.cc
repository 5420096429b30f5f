// Quantized softmax of int8 along one dim: per row its maximum, the sum of the table entries e^(-input_scale * d)
// for d = max - q, one reciprocal, and each entry times it (util/softmax_table.h: the arithmetic and why it is the
// same on every target). Any dim: a row is `length` elements `inner` apart; rows are contiguous when dim is the last.
// The table and the output's multiplier are built once at load by softmax_prepare; kernels/helium's vector softmax
// shares them, and hands this kernel the calls along other dims.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/softmax_table.h"

namespace ember {
namespace quantized {
namespace {

// Pointers stepped by `inner`, not an int64 index multiplied by it: on a 32-bit core the index arithmetic had cost
// more than the work.
void softmax_row(const int8_t* x, int8_t* o, int64_t length, int64_t inner, const SoftmaxState& state) {
  const int8_t* const end = x + length * inner;
  int32_t max = -128;
  for (const int8_t* p = x; p != end; p += inner) max = *p > max ? *p : max;
  const int32_t* table = state.table;
  int64_t sum = 0;
  for (const int8_t* p = x; p != end; p += inner) sum += table[max - *p];
  const RequantSteps steps = softmax_row_steps(state, sum);
  const int32_t zero_point = state.output_zero_point;
  for (const int8_t* p = x; p != end; p += inner, o += inner) *o = softmax_one(table[max - *p], steps, zero_point);
}

}  // namespace

KernelMemory softmax_memory(const KernelArgs& args) { return softmax_table_memory(args); }
Error softmax_prepare(const KernelArgs& args, void* state) { return softmax_table_prepare(args, state); }

// The quantization arguments are read from the state softmax_prepare filled, not from here.
void softmax_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                 int64_t dim, double /*output_scale*/, int64_t /*output_zero_point*/, Tensor& out) {
  SoftmaxRows rows;
  if (!plan_softmax(ctx, input, dim, out, &rows)) return;
  constexpr uint32_t kMask = selected_dtypes::softmax_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::softmax.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const SoftmaxState& state = *ctx.state<SoftmaxState>();
    const int64_t block = rows.length * rows.inner;
    for (int64_t b = 0; b < rows.outer; ++b) {
      for (int64_t j = 0; j < rows.inner; ++j) {
        softmax_row(x + b * block + j, o + b * block + j, rows.length, rows.inner, state);
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
