#include "backends/xnnpack/runtime/transpose.h"

namespace ember {
namespace xnnpack {

namespace {

constexpr uint32_t kMaxRank = 6;

// Walks the output in order; the input offset advances by the permuted strides (an odometer over the output dims).
template <typename T>
void permute(const T* src, T* dst, const uint64_t* out_dims, const uint64_t* in_strides, uint32_t rank) {
  uint64_t index[kMaxRank] = {};
  uint64_t total = 1;
  for (uint32_t k = 0; k < rank; ++k) total *= out_dims[k];
  if (total == 0) return;
  const uint64_t inner = out_dims[rank - 1];
  const uint64_t inner_stride = in_strides[rank - 1];
  uint64_t offset = 0;
  for (uint64_t done = 0; done < total; done += inner) {
    const T* s = src + offset;
    for (uint64_t i = 0; i < inner; ++i) dst[i] = s[i * inner_stride];
    dst += inner;
    // Next row: carry through the outer dims.
    for (int32_t k = static_cast<int32_t>(rank) - 2; k >= 0; --k) {
      offset += in_strides[k];
      if (++index[k] < out_dims[k]) break;
      offset -= in_strides[k] * out_dims[k];
      index[k] = 0;
    }
  }
}

}  // namespace

void transpose(const void* src, void* dst, const uint32_t* dims, const uint32_t* perm, uint32_t rank,
               size_t element_size) {
  uint64_t in_strides[kMaxRank];
  uint64_t stride = 1;
  for (int32_t d = static_cast<int32_t>(rank) - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= dims[d];
  }
  uint64_t out_dims[kMaxRank] = {1};
  uint64_t strides[kMaxRank] = {1};
  for (uint32_t k = 0; k < rank; ++k) {
    out_dims[k] = dims[perm[k]];
    strides[k] = in_strides[perm[k]];
  }
  const uint32_t r = rank == 0 ? 1 : rank;  // a scalar is one element
  switch (element_size) {
    case 1: permute(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), out_dims, strides, r); break;
    case 2: permute(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), out_dims, strides, r); break;
    default: permute(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), out_dims, strides, r); break;
  }
}

}  // namespace xnnpack
}  // namespace ember
