// Tensors: TensorImpl describes one (type, shape, layout, data pointer) over memory it does not own; Tensor is
// the small handle kernels take. The shape arrays live in the method's allocator; data lives in a planned pool,
// the constant segment, or caller memory. Nothing here allocates.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember {

enum class ShapeDynamism : uint8_t { Static = 0, DynamicBound = 1, DynamicUnbound = 2 };

constexpr int kMaxTensorDim = 16;

// numel of `sizes`, or InvalidArgument for a negative size or more than 2^31 - 1 elements, a size of 0 counting
// as 1 (an empty tensor's other dims bound the slices a kernel walks).
Result<int64_t> checked_numel(ArrayRef<int32_t> sizes);
// numel * element_size(type) with the same checks, and InvalidType for a type without storage.
Result<size_t> checked_nbytes(ScalarType type, ArrayRef<int32_t> sizes);
// Strides (in elements) of a dense tensor whose dimensions are laid out outermost-first in `dim_order`.
// InvalidArgument when dim_order is not a permutation of 0..dim-1.
Error compute_strides(ArrayRef<int32_t> sizes, ArrayRef<uint8_t> dim_order, Span<int32_t> strides);

class TensorImpl {
 public:
  // `sizes`, `dim_order` and `strides` each hold `dim` entries and must outlive the TensorImpl. Strides are
  // computed here from sizes and dim order; the caller only provides the storage.
  static Result<TensorImpl> make(ScalarType type, int32_t dim, int32_t* sizes, uint8_t* dim_order, int32_t* strides,
                                 void* data, ShapeDynamism dynamism = ShapeDynamism::Static);

  ScalarType scalar_type() const { return type_; }
  int32_t dim() const { return dim_; }
  ArrayRef<int32_t> sizes() const { return {sizes_, static_cast<size_t>(dim_)}; }
  ArrayRef<uint8_t> dim_order() const { return {dim_order_, static_cast<size_t>(dim_)}; }
  ArrayRef<int32_t> strides() const { return {strides_, static_cast<size_t>(dim_)}; }
  int64_t numel() const { return numel_; }
  size_t element_size() const { return ::ember::element_size(type_); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(); }
  // Bytes available at data(): the planned size for a bounded tensor (so it may grow up to it), else nbytes.
  size_t capacity() const { return capacity_; }
  ShapeDynamism shape_dynamism() const { return dynamism_; }

  void* mutable_data() const { return data_; }
  const void* data() const { return data_; }
  void set_data(void* data) { data_ = data; }
  void set_capacity(size_t bytes) { capacity_ = bytes; }

  // ExecuTorch's rules and codes, so a caller handles both runtimes alike: the rank never changes; a static
  // tensor keeps its sizes; a bounded (or unbounded, treated as bounded) one may take any sizes whose bytes fit
  // its capacity. Each refusal is NotSupported; a negative or overflowing size is InvalidArgument.
  Error resize(ArrayRef<int32_t> new_sizes);

  bool is_contiguous() const;

 private:
  TensorImpl() = default;

  ScalarType type_ = ScalarType::Float;
  int32_t dim_ = 0;
  int32_t* sizes_ = nullptr;
  uint8_t* dim_order_ = nullptr;
  int32_t* strides_ = nullptr;
  void* data_ = nullptr;
  int64_t numel_ = 0;
  size_t capacity_ = 0;
  ShapeDynamism dynamism_ = ShapeDynamism::Static;
};

class Tensor {
 public:
  Tensor() : impl_(nullptr) {}
  explicit Tensor(TensorImpl* impl) : impl_(impl) {}

  TensorImpl* impl() const { return impl_; }
  ScalarType scalar_type() const { return impl_->scalar_type(); }
  int32_t dim() const { return impl_->dim(); }
  ArrayRef<int32_t> sizes() const { return impl_->sizes(); }
  int32_t size(int32_t d) const { return impl_->sizes()[static_cast<size_t>(d)]; }
  ArrayRef<uint8_t> dim_order() const { return impl_->dim_order(); }
  ArrayRef<int32_t> strides() const { return impl_->strides(); }
  int64_t numel() const { return impl_->numel(); }
  size_t nbytes() const { return impl_->nbytes(); }
  size_t element_size() const { return impl_->element_size(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }

  template <typename T>
  const T* const_data_ptr() const {
    return static_cast<const T*>(impl_->data());
  }
  template <typename T>
  T* mutable_data_ptr() const {
    return static_cast<T*>(impl_->mutable_data());
  }
  const void* const_data_ptr() const { return impl_->data(); }
  void* mutable_data_ptr() const { return impl_->mutable_data(); }

 private:
  TensorImpl* impl_;
};

}  // namespace ember
