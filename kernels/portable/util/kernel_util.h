// Helpers every portable kernel family uses: output shape checks, broadcasting, and element loads across dtypes.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/core/numeric.h"
#include "runtime/core/scalar_type.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

// Half and BFloat16 compute in float, Bool8 in bool; everything else in itself.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <>
struct ComputeType<Bool8> {
  using type = bool;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

// Element i of a tensor of any real or bool dtype, converted to C. Used only where input dtypes differ from the
// compute type (mixed-dtype calls); the common same-dtype path reads T directly.
template <typename C>
C load_as(const void* data, ScalarType type, int64_t i) {
  switch (type) {
    // convert: a NaN, infinite or out-of-range float into an integer C is defined (saturating, NaN -> 0).
    case ScalarType::Float: return convert<C>(static_cast<const float*>(data)[i]);
    case ScalarType::Double: return convert<C>(static_cast<const double*>(data)[i]);
    case ScalarType::Half: return convert<C>(static_cast<float>(static_cast<const Half*>(data)[i]));
    case ScalarType::BFloat16: return convert<C>(static_cast<float>(static_cast<const BFloat16*>(data)[i]));
    case ScalarType::Long: return static_cast<C>(static_cast<const int64_t*>(data)[i]);
    case ScalarType::Int: return static_cast<C>(static_cast<const int32_t*>(data)[i]);
    case ScalarType::Short: return static_cast<C>(static_cast<const int16_t*>(data)[i]);
    case ScalarType::Char: return static_cast<C>(static_cast<const int8_t*>(data)[i]);
    case ScalarType::Byte: return static_cast<C>(static_cast<const uint8_t*>(data)[i]);
    case ScalarType::Bool: return static_cast<C>(static_cast<bool>(static_cast<const Bool8*>(data)[i]));
    default: return C();
  }
}

// Whether `out` has exactly `sizes` (ints of any width); bounded-dynamic outputs are resized to them. A size
// outside [0, 2^31) never fits: truncated to int32 it could match out while the kernel loops over the real one.
template <typename Int>
bool fit_output(Tensor& out, const Int* sizes, size_t dim) {
  if (static_cast<size_t>(out.dim()) != dim || dim > static_cast<size_t>(kMaxTensorDim)) return false;
  int32_t s[kMaxTensorDim];
  for (size_t i = 0; i < dim; ++i) {
    if (sizes[i] < 0 || static_cast<int64_t>(sizes[i]) > INT32_MAX) return false;
    s[i] = static_cast<int32_t>(sizes[i]);
  }
  return out.impl()->resize(ArrayRef<int32_t>(s, dim)) == Error::Ok;
}
inline bool fit_output(Tensor& out, ArrayRef<int32_t> sizes) { return fit_output(out, sizes.data(), sizes.size()); }

// ATen's broadcast of two shapes into `out_sizes` (returns its rank), or -1 when they do not broadcast.
int broadcast_shape(ArrayRef<int32_t> a, ArrayRef<int32_t> b, int32_t* out_sizes);

// For each output element index (row-major over `out_sizes`), the matching element index of an input of shape
// `in` broadcast to it: the input's strides with 0 where it is broadcast.
struct BroadcastIndexer {
  int dim = 0;
  int32_t out_sizes[kMaxTensorDim];
  int64_t in_strides[kMaxTensorDim];
  BroadcastIndexer(ArrayRef<int32_t> in, const int32_t* out, int out_dim);
  // The same over an input laid out with `strides` (elements; any dim order), not row-major.
  BroadcastIndexer(ArrayRef<int32_t> in, ArrayRef<int32_t> strides, const int32_t* out, int out_dim);
  // Input index of output element `i` (row-major).
  int64_t operator()(int64_t i) const {
    int64_t idx = 0;
    for (int d = dim - 1; d >= 0; --d) {
      const int64_t s = out_sizes[d];
      idx += (i % s) * in_strides[d];
      i /= s;
    }
    return idx;
  }
};

bool same_shape(const Tensor& a, const Tensor& b);

// Dispatch helper: runs `fn` with the C++ type of `type` if it is in `Mask`, else fails the kernel naming `op`.
#define EMBER_DISPATCH(ctx, op, Mask, type, ...)                                                              \
  do {                                                                                                        \
    if (!::ember::dispatch_dtype<(Mask)>((type), __VA_ARGS__)) {                                              \
      EMBER_LOG(ERROR, "%s: dtype %s is not supported by this build", (op), ::ember::scalar_type_name(type)); \
      (ctx).fail(::ember::Error::InvalidArgument);                                                            \
      return;                                                                                                 \
    }                                                                                                         \
  } while (0)

}  // namespace portable
}  // namespace ember
