#include "runtime/core/tensor.h"

#include "runtime/core/log.h"

namespace ember {

Result<int64_t> checked_numel(ArrayRef<int32_t> sizes) {
  // Every size counts at least once, so an empty tensor's other dims stay within what a real tensor could hold
  // (2^31 - 1 elements): kernels walk an empty tensor's slices, and a hostile [0, 2^30, 2^30] kept them looping
  // over nothing for hours (kernel_fuzz found three such loops). Each factor and the running product stay below
  // 2^31, so the product cannot overflow.
  int64_t n = 1, claimed = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int32_t s = sizes[i];
    if (s < 0) {
      EMBER_LOG(ERROR, "size %d of dimension %u is negative", static_cast<int>(s), static_cast<unsigned>(i));
      return Error::InvalidArgument;
    }
    claimed *= s != 0 ? s : 1;
    if (claimed > INT32_MAX) {
      EMBER_LOG(ERROR, "element count overflows 2^31-1 at dimension %u (size %d)", static_cast<unsigned>(i),
                static_cast<int>(s));
      return Error::InvalidArgument;
    }
    n *= s;
  }
  return n;
}

Result<size_t> checked_nbytes(ScalarType type, ArrayRef<int32_t> sizes) {
  const size_t elem = element_size(type);
  if (elem == 0) {
    EMBER_LOG(ERROR, "scalar type %d (%s) has no storage in this runtime", static_cast<int>(type),
              scalar_type_name(type));
    return Error::InvalidType;
  }
  EMBER_TRY_ASSIGN(n, checked_numel(sizes));
  if (static_cast<uint64_t>(n) > SIZE_MAX / elem) {
    EMBER_LOG(ERROR, "%lld elements of %u bytes overflow size_t", static_cast<long long>(n),
              static_cast<unsigned>(elem));
    return Error::InvalidArgument;
  }
  return static_cast<size_t>(n) * elem;
}

Error compute_strides(ArrayRef<int32_t> sizes, ArrayRef<uint8_t> dim_order, Span<int32_t> strides) {
  const size_t dim = sizes.size();
  EMBER_CHECK_OR_RETURN_ERROR(dim_order.size() == dim && strides.size() == dim, InvalidArgument,
                              "dim order has %u entries and strides %u for a %u-d tensor",
                              static_cast<unsigned>(dim_order.size()), static_cast<unsigned>(strides.size()),
                              static_cast<unsigned>(dim));
  uint32_t seen = 0;
  for (size_t i = 0; i < dim; ++i) {
    const uint8_t d = dim_order[i];
    EMBER_CHECK_OR_RETURN_ERROR(d < dim && !(seen >> d & 1u), InvalidArgument,
                                "dim order entry %u is %u: not a permutation of 0..%u", static_cast<unsigned>(i),
                                static_cast<unsigned>(d), static_cast<unsigned>(dim ? dim - 1 : 0));
    seen |= 1u << d;
  }
  // The innermost dimension (last in dim order) has stride 1.
  int64_t stride = 1;
  for (size_t i = dim; i-- > 0;) {
    const uint8_t d = dim_order[i];
    strides[d] = static_cast<int32_t>(stride);
    stride *= sizes[d] > 1 ? sizes[d] : 1;
    EMBER_CHECK_OR_RETURN_ERROR(stride <= INT32_MAX, InvalidArgument, "strides overflow 32 bits at dimension %u",
                                static_cast<unsigned>(d));
  }
  return Error::Ok;
}

Result<TensorImpl> TensorImpl::make(ScalarType type, int32_t dim, int32_t* sizes, uint8_t* dim_order, int32_t* strides,
                                    void* data, ShapeDynamism dynamism) {
  EMBER_CHECK_OR_RETURN_ERROR(dim >= 0 && dim <= kMaxTensorDim, NotSupported,
                              "tensor of %d dimensions (at most %d supported)", static_cast<int>(dim), kMaxTensorDim);
  EMBER_CHECK_OR_RETURN_ERROR(is_valid_scalar_type(static_cast<int>(type)), InvalidType, "scalar type %d is invalid",
                              static_cast<int>(type));
  const size_t n = static_cast<size_t>(dim);
  EMBER_TRY_ASSIGN(nbytes, checked_nbytes(type, ArrayRef<int32_t>(sizes, n)));
  EMBER_TRY(compute_strides(ArrayRef<int32_t>(sizes, n), ArrayRef<uint8_t>(dim_order, n), Span<int32_t>(strides, n)));
  TensorImpl t;
  t.type_ = type;
  t.dim_ = dim;
  t.sizes_ = sizes;
  t.dim_order_ = dim_order;
  t.strides_ = strides;
  t.data_ = data;
  t.numel_ = static_cast<int64_t>(nbytes / ::ember::element_size(type));
  t.capacity_ = nbytes;
  t.dynamism_ = dynamism;
  return t;
}

Error TensorImpl::resize(ArrayRef<int32_t> new_sizes) {
  EMBER_CHECK_OR_RETURN_ERROR(new_sizes.size() == static_cast<size_t>(dim_), NotSupported,
                              "cannot resize a %d-d tensor to %u dimensions: the rank is fixed", static_cast<int>(dim_),
                              static_cast<unsigned>(new_sizes.size()));
  if (dynamism_ == ShapeDynamism::Static) {
    for (int32_t i = 0; i < dim_; ++i) {
      EMBER_CHECK_OR_RETURN_ERROR(new_sizes[static_cast<size_t>(i)] == sizes_[i], NotSupported,
                                  "static tensor: dimension %d is %d and cannot become %d", static_cast<int>(i),
                                  static_cast<int>(sizes_[i]), static_cast<int>(new_sizes[static_cast<size_t>(i)]));
    }
    return Error::Ok;
  }
  EMBER_TRY_ASSIGN(nbytes, checked_nbytes(type_, new_sizes));
  EMBER_CHECK_OR_RETURN_ERROR(nbytes <= capacity_, NotSupported,
                              "resizing a bounded tensor to %zu bytes exceeds its capacity of %zu bytes", nbytes,
                              capacity_);
  for (int32_t i = 0; i < dim_; ++i) sizes_[i] = new_sizes[static_cast<size_t>(i)];
  numel_ = static_cast<int64_t>(nbytes / element_size());
  return compute_strides(sizes(), dim_order(), Span<int32_t>(strides_, static_cast<size_t>(dim_)));
}

bool TensorImpl::is_contiguous() const {
  for (int32_t i = 0; i < dim_; ++i) {
    if (dim_order_[i] != i) return false;
  }
  return true;
}

}  // namespace ember
