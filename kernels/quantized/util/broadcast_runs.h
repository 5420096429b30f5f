// An elementwise binary op's walk over its broadcast output as runs: the output's dims, with the size-1 ones
// dropped and neighbours that step alike merged, split into outer dims and one innermost run of `inner`
// contiguous output elements. Within a run each input either steps by one element or repeats a single one (it is
// broadcast along the run), so a kernel's inner loop is a contiguous vector loop against either a vector or a
// constant: a same-shape call is one run, a per-channel scale of NCHW ([1, C, 1, 1]) is N * C runs of H * W, a
// scalar is one run with the other input repeated. Shared by kernels/quantized's scalar loops and kernels/helium's
// MVE ones, so both walk the same elements.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"

namespace ember {
namespace quantized {

struct BroadcastRuns {
  int32_t rank;                          // outer dims (after merging)
  int64_t sizes[kMaxTensorDim];          // outer dims' sizes
  int64_t self_strides[kMaxTensorDim];   // element steps of each input per outer dim (0 where broadcast)
  int64_t other_strides[kMaxTensorDim];
  int64_t runs;                          // product of the outer sizes (0 for an empty output)
  int64_t inner;                         // elements per run
  bool self_steps, other_steps;          // whether each input steps along the run (else repeats one element)
};

// The runs of contiguous `self` and `other` broadcast to `out_sizes` (which broadcast_shape gave). Row-major.
BroadcastRuns broadcast_runs(ArrayRef<int32_t> self, ArrayRef<int32_t> other, ArrayRef<int32_t> out_sizes);

// Calls fn(self_offset, other_offset, out_offset) for each run, in output order.
template <typename Fn>
void for_each_run(const BroadcastRuns& r, Fn fn) {
  int64_t coord[kMaxTensorDim] = {};
  int64_t a = 0, b = 0, o = 0;
  for (int64_t run = 0; run < r.runs; ++run, o += r.inner) {
    fn(a, b, o);
    // The odometer: step the innermost outer dim, carrying into the ones before it.
    for (int32_t d = r.rank - 1; d >= 0; --d) {
      a += r.self_strides[d];
      b += r.other_strides[d];
      if (++coord[d] < r.sizes[d]) break;
      a -= r.self_strides[d] * r.sizes[d];
      b -= r.other_strides[d] * r.sizes[d];
      coord[d] = 0;
    }
  }
}

}  // namespace quantized
}  // namespace ember
