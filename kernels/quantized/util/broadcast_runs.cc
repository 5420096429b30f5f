#include "kernels/quantized/util/broadcast_runs.h"

namespace ember {
namespace quantized {
namespace {

// A contiguous input's element steps along each output dim: its row-major strides right-aligned with the
// output's dims, 0 where it has size 1 (or lacks the dim) and is broadcast.
void input_steps(ArrayRef<int32_t> in, ArrayRef<int32_t> out, int64_t* steps) {
  const int32_t n_out = static_cast<int32_t>(out.size()), n_in = static_cast<int32_t>(in.size());
  int64_t stride = 1;
  for (int32_t d = n_out - 1; d >= 0; --d) {
    const int32_t k = d - (n_out - n_in);
    const int64_t size = k >= 0 ? in[static_cast<size_t>(k)] : 1;
    steps[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

}  // namespace

BroadcastRuns broadcast_runs(ArrayRef<int32_t> self, ArrayRef<int32_t> other, ArrayRef<int32_t> out_sizes) {
  int64_t self_steps[kMaxTensorDim], other_steps[kMaxTensorDim];
  input_steps(self, out_sizes, self_steps);
  input_steps(other, out_sizes, other_steps);
  // Dims from the innermost out, size-1 ones dropped; a dim joins the one inside it when both inputs step
  // through the pair as through one dim (stride = inner stride * inner size; two zeros qualify).
  int64_t sizes[kMaxTensorDim], sa[kMaxTensorDim], sb[kMaxTensorDim];
  int32_t n = 0;
  int64_t numel = 1;
  for (int32_t d = static_cast<int32_t>(out_sizes.size()) - 1; d >= 0; --d) {
    const int64_t size = out_sizes[static_cast<size_t>(d)];
    numel *= size;
    if (size == 1) continue;
    if (n > 0 && self_steps[d] == sa[n - 1] * sizes[n - 1] && other_steps[d] == sb[n - 1] * sizes[n - 1]) {
      sizes[n - 1] *= size;
      continue;
    }
    sizes[n] = size;
    sa[n] = self_steps[d];
    sb[n] = other_steps[d];
    ++n;
  }
  BroadcastRuns r{};
  if (n == 0) {  // a single element (or an output of rank 0)
    r.runs = numel;
    r.inner = 1;
    r.self_steps = r.other_steps = true;
    return r;
  }
  // The innermost kept dim is the run; an input's step there is 1 (every dim inside it has size 1) or 0.
  r.inner = sizes[0];
  r.self_steps = sa[0] != 0;
  r.other_steps = sb[0] != 0;
  r.rank = n - 1;
  r.runs = numel == 0 ? 0 : 1;
  for (int32_t i = 1; i < n; ++i) {  // outer dims, stored outermost first
    const int32_t d = n - 1 - i;
    r.sizes[d] = sizes[i];
    r.self_strides[d] = sa[i];
    r.other_strides[d] = sb[i];
    r.runs *= sizes[i];
  }
  if (numel == 0) r.inner = 0;
  return r;
}

}  // namespace quantized
}  // namespace ember
