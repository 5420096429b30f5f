// Byte-level data movement shared by the shape and indexing kernels: strided views over a tensor's memory, a
// strided copy between two views of the same sizes, element conversion between dtypes, and a row-major walk that
// keeps offsets into several tensors in step. Everything works on element sizes, so a pure data-movement kernel
// costs the same code for every dtype.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/evalue.h"

namespace ember {
namespace portable {

// Room for twice the tensor rank: repeat views each dim as (repeat, size).
constexpr int kMaxViewDim = 2 * kMaxTensorDim;

// Element (c0, ..., cn-1) of a view lives at element offset + sum(c[d] * strides[d]) of the underlying memory.
// Strides may be zero (broadcast) or negative (flip).
struct StridedView {
  int rank = 0;
  int64_t sizes[kMaxViewDim];
  int64_t strides[kMaxViewDim];
  int64_t offset = 0;

  int64_t numel() const;
  // Removes dim d (its coordinate fixed at 0; add to `offset` first to fix it elsewhere).
  void drop(int d);
  // Inserts a dim of `size` and `stride` before dim d.
  void insert(int d, int64_t size, int64_t stride);
};

// t's own sizes and strides (any dim order), offset 0.
StridedView view_of(const Tensor& t);

// Copies each element of `src` into the same position of `dst` (both with `dst`'s sizes; src's sizes are
// ignored). When the dtypes differ each element is converted, else bytes move (rows of unit stride in one
// memmove, so an aliased dst == src copy is harmless).
void strided_copy(void* dst, const StridedView& dv, ScalarType dst_type, const void* src, const StridedView& sv,
                  ScalarType src_type);

// One element of src_type at `src` written as dst_type at `dst`: integers through int64, floating values through
// double, as PyTorch's casts.
void convert_element(void* dst, ScalarType dst_type, const void* src, ScalarType src_type);

// Whether the element at `p` is nonzero: any bit set, except the sign bit of a floating-point type (-0.0 == 0).
bool element_nonzero(const void* p, ScalarType type);

// Element offset of row-major position `i` in a tensor of `sizes` and `strides`.
int64_t offset_of(int64_t i, ArrayRef<int32_t> sizes, ArrayRef<int32_t> strides);

// A row-major walk over `sizes`, keeping the element offset into up to three tensors (each with its own
// strides over the same coordinates) in step: next() is O(1) amortised.
struct Walk {
  static constexpr int kMaxOperands = 3;
  int rank = 0;
  int operands = 0;
  int64_t sizes[kMaxViewDim];
  int64_t coord[kMaxViewDim];
  int64_t strides[kMaxOperands][kMaxViewDim];
  int64_t off[kMaxOperands];

  explicit Walk(ArrayRef<int32_t> s);
  Walk(const int64_t* s, int r);
  // Adds an operand walked with `st` (one per dim; e.g. a tensor's strides, 0 where broadcast); returns its slot.
  int add(const int64_t* st, int64_t start = 0);
  int add(ArrayRef<int32_t> st, int64_t start = 0);
  void next();
};

// Strides of a tensor of shape `in` broadcast to `out` (right-aligned; 0 where `in` is 1 or missing) into `st`,
// from `in`'s own strides. False when `in` does not broadcast to `out`.
bool broadcast_strides(const Tensor& in, ArrayRef<int32_t> out, int64_t* st);

}  // namespace portable
}  // namespace ember
