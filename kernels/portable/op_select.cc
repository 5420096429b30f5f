// Selection and gathering: where (with broadcasting), cat along a dim, embedding (row lookup), amax.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/reduce_util.h"

namespace ember {
namespace portable {

namespace {

// where's direct loop, per element size rather than dtype (one copy of it serves every selected dtype): a one-element
// operand is read at index 0 throughout. The element types may alias the tensors' own (float, double, ...).
typedef uint8_t __attribute__((may_alias)) Bytes1;
typedef uint16_t __attribute__((may_alias)) Bytes2;
typedef uint32_t __attribute__((may_alias)) Bytes4;
typedef uint64_t __attribute__((may_alias)) Bytes8;

template <class E>
void where_direct_as(const Bool8* c, const E* a, const E* b, E* o, int64_t n, int64_t sc, int64_t sa, int64_t sb) {
  for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? a[i * sa] : b[i * sb];
}

// n elements; each operand's stride is 1, or 0 for one element repeated.
void where_direct(const Bool8* c, const void* a, const void* b, void* o, int64_t n, int64_t sc, int64_t sa, int64_t sb,
                  size_t size) {
  switch (size) {
    case 1:
      return where_direct_as(c, static_cast<const Bytes1*>(a), static_cast<const Bytes1*>(b), static_cast<Bytes1*>(o),
                             n, sc, sa, sb);
    case 2:
      return where_direct_as(c, static_cast<const Bytes2*>(a), static_cast<const Bytes2*>(b), static_cast<Bytes2*>(o),
                             n, sc, sa, sb);
    case 4:
      return where_direct_as(c, static_cast<const Bytes4*>(a), static_cast<const Bytes4*>(b), static_cast<Bytes4*>(o),
                             n, sc, sa, sb);
    default:
      return where_direct_as(c, static_cast<const Bytes8*>(a), static_cast<const Bytes8*>(b), static_cast<Bytes8*>(o),
                             n, sc, sa, sb);
  }
}

// Row by row: each operand's row start from its indexer, its elements at stride 1 or 0. Not per dtype, as above.
void where_rows(const Bool8* c, const void* a, const void* b, void* o, int64_t numel, int64_t inner,
                const BroadcastIndexer& ic, const BroadcastIndexer& ia, const BroadcastIndexer& ib, int64_t sc,
                int64_t sa, int64_t sb, size_t size) {
  const uint8_t* pa = static_cast<const uint8_t*>(a);
  const uint8_t* pb = static_cast<const uint8_t*>(b);
  uint8_t* po = static_cast<uint8_t*>(o);
  for (int64_t i = 0; i < numel; i += inner) {
    where_direct(c + ic(i), pa + ia(i) * static_cast<int64_t>(size), pb + ib(i) * static_cast<int64_t>(size),
                 po + i * static_cast<int64_t>(size), inner, sc, sa, sb, size);
  }
}

}  // namespace

void where_out(KernelContext& ctx, const Tensor& condition, const Tensor& self, const Tensor& other, Tensor& out) {
  int32_t s1[kMaxTensorDim], shape[kMaxTensorDim];
  const int n1 = broadcast_shape(condition.sizes(), self.sizes(), s1);
  const int n = n1 < 0 ? -1 : broadcast_shape(ArrayRef<int32_t>(s1, static_cast<size_t>(n1)), other.sizes(), shape);
  EMBER_KERNEL_CHECK(ctx, n >= 0, InvalidArgument, "where.self_out: condition, self and other do not broadcast");
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(n)), InvalidArgument,
                     "where.self_out: out has the wrong shape");
  EMBER_KERNEL_CHECK(ctx, condition.scalar_type() == ScalarType::Bool, InvalidArgument,
                     "where.self_out: condition must be Bool, got %s", scalar_type_name(condition.scalar_type()));
  // Each operand out's shape or one element (a mask choosing between two constants, as attention's additive mask is
  // made from a boolean one): index directly. The general broadcast below costs ~90 instructions an element.
  auto plain = [&](const Tensor& t) {
    return (t.numel() == 1 || t.sizes().equals(out.sizes())) &&
           (&t == &condition || t.scalar_type() == out.scalar_type());
  };
  const bool direct = plain(condition) && plain(self) && plain(other);
  // Operands broadcast along outer dims only (an attention mask [1, 1, S, S] against scores [1, H, S, S], as
  // ExecuTorch's exports of BERT select them): row by row, each operand's row start found once and its last dim
  // read whole or as one element repeated. BERT-mini's 8 wheres on [1, 4, 128, 128]: 3.7 ms -> 0.2 ms.
  const int64_t inner = n > 0 ? shape[n - 1] : 1;
  auto by_rows = [&](const Tensor& t) {
    const int64_t last = t.dim() > 0 ? t.size(t.dim() - 1) : 1;
    return (last == inner || last == 1) && (&t == &condition || t.scalar_type() == out.scalar_type());
  };
  const bool rows = !direct && inner > 0 && by_rows(condition) && by_rows(self) && by_rows(other);
  auto step = [&](const Tensor& t) -> int64_t { return t.dim() > 0 && t.size(t.dim() - 1) == inner && inner > 1; };
  EMBER_DISPATCH(ctx, "where.self_out", selected_dtypes::where_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const Bool8* c = condition.const_data_ptr<Bool8>();
    T* o = out.mutable_data_ptr<T>();
    if (direct) {
      return where_direct(c, self.const_data_ptr(), other.const_data_ptr(), o, out.numel(), condition.numel() != 1,
                          self.numel() != 1, other.numel() != 1, sizeof(T));
    }
    const BroadcastIndexer ic(condition.sizes(), shape, n), ia(self.sizes(), shape, n), ib(other.sizes(), shape, n);
    if (rows) {
      return where_rows(c, self.const_data_ptr(), other.const_data_ptr(), o, out.numel(), inner, ic, ia, ib,
                        step(condition), step(self), step(other), sizeof(T));
    }
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i] = c[ic(i)] ? static_cast<T>(load_as<C>(self.const_data_ptr(), self.scalar_type(), ia(i)))
                      : static_cast<T>(load_as<C>(other.const_data_ptr(), other.scalar_type(), ib(i)));
    }
  });
}

void cat_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, tensors.size() > 0, InvalidArgument, "cat.out: no tensors");
  // ATen skips 1-d empty tensors in cat; the first other tensor gives the shape (out's is computed from the
  // inputs: with bounded dynamic shapes they are smaller than planned).
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  size_t first = 0;
  while (first < tensors.size() && skipped(tensors[first])) ++first;
  if (first == tensors.size()) {
    const int32_t empty[1] = {0};
    EMBER_KERNEL_CHECK(ctx, out.dim() != 1 || fit_output(out, ArrayRef<int32_t>(empty, 1)), InvalidArgument,
                       "cat.out: out must be empty");
    EMBER_KERNEL_CHECK(ctx, out.numel() == 0, InvalidArgument, "cat.out: every tensor is empty; out must be too");
    return;
  }
  const Tensor& ref = tensors[first];
  const int32_t rank = ref.dim();
  const int64_t d = dim < 0 ? dim + rank : dim;
  EMBER_KERNEL_CHECK(ctx, d >= 0 && d < rank, InvalidArgument, "cat.out: dim %lld out of range",
                     static_cast<long long>(dim));
  int64_t total = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    if (skipped(t)) continue;
    EMBER_KERNEL_CHECK(ctx, t.dim() == rank && t.scalar_type() == out.scalar_type(), InvalidArgument,
                       "cat.out: tensor %zu has rank %d or dtype %s, tensor %zu has %d and out %s", k,
                       static_cast<int>(t.dim()), scalar_type_name(t.scalar_type()), first, static_cast<int>(rank),
                       scalar_type_name(out.scalar_type()));
    for (int32_t i = 0; i < rank; ++i) {
      EMBER_KERNEL_CHECK(ctx, i == d || t.size(i) == ref.size(i), InvalidArgument,
                         "cat.out: tensor %zu differs from tensor %zu in dim %d", k, first, static_cast<int>(i));
    }
    EMBER_KERNEL_CHECK(ctx, t.dim_order().equals(out.dim_order()), NotSupported,
                       "cat.out: tensor %zu's dim order differs from out's", k);
    total += t.size(static_cast<int32_t>(d));
  }
  int64_t shape[kMaxTensorDim];
  for (int32_t i = 0; i < rank; ++i) shape[i] = i == d ? total : ref.size(i);
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, static_cast<size_t>(rank)), InvalidArgument,
                     "cat.out: out cannot take the %lld entries along dim %lld", static_cast<long long>(total),
                     static_cast<long long>(d));
  // Nothing to copy, and an empty dim after `d` would otherwise leave billions of zero-byte copies to loop over
  // (found by tests/fuzz:kernel_fuzz as a timeout).
  if (out.numel() == 0) return;
  // Every tensor shares out's dim order (contiguous or channels-last), so the copy runs in memory order with `d`
  // at its place in that order: a channels-last cat along C copies runs of C per pixel.
  const ArrayRef<uint8_t> order = out.dim_order();
  int32_t at_d = 0;
  while (at_d + 1 < rank && order[static_cast<size_t>(at_d)] != d) ++at_d;
  int64_t outer = 1, inner = 1;
  for (int32_t i = 0; i < at_d; ++i) outer *= out.size(order[static_cast<size_t>(i)]);
  for (int32_t i = at_d + 1; i < rank; ++i) inner *= out.size(order[static_cast<size_t>(i)]);
  const size_t elem = out.element_size();
  uint8_t* o = static_cast<Bytes1*>(out.mutable_data_ptr());
  const int64_t out_row = out.size(static_cast<int32_t>(d)) * inner;
  int64_t at = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    if (t.dim() == 1 && t.numel() == 0) continue;
    const int64_t rows = t.size(static_cast<int32_t>(d)) * inner;
    const uint8_t* x = static_cast<const Bytes1*>(t.const_data_ptr());
    for (int64_t a = 0; a < outer; ++a) {
      memmove(o + static_cast<size_t>(a * out_row + at) * elem, x + static_cast<size_t>(a * rows) * elem,
              static_cast<size_t>(rows) * elem);
    }
    at += rows;
  }
}

void embedding_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                   bool scale_grad_by_freq, bool sparse, Tensor& out) {
  (void)padding_idx;  // only affects gradients
  (void)scale_grad_by_freq;
  (void)sparse;
  EMBER_KERNEL_CHECK(ctx, weight.dim() == 2, InvalidArgument, "embedding.out: weight must be 2-d");
  EMBER_KERNEL_CHECK(ctx, indices.scalar_type() == ScalarType::Long || indices.scalar_type() == ScalarType::Int,
                     InvalidArgument, "embedding.out: indices must be Long or Int");
  int32_t shape[kMaxTensorDim];
  EMBER_KERNEL_CHECK(ctx, indices.dim() + 1 <= kMaxTensorDim, InvalidArgument, "embedding.out: too many dims");
  for (int32_t i = 0; i < indices.dim(); ++i) shape[i] = indices.size(i);
  shape[indices.dim()] = weight.size(1);
  EMBER_KERNEL_CHECK(ctx,
                     fit_output(out, shape, static_cast<size_t>(indices.dim() + 1)) &&
                         out.scalar_type() == weight.scalar_type(),
                     InvalidArgument, "embedding.out: out has the wrong shape or dtype");
  const int64_t rows = weight.size(0), width = weight.size(1);
  const size_t row_bytes = static_cast<size_t>(width) * weight.element_size();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t r = load_as<int64_t>(indices.const_data_ptr(), indices.scalar_type(), i);
    EMBER_KERNEL_CHECK(ctx, r >= 0 && r < rows, InvalidArgument,
                       "embedding.out: index %lld at position %lld is "
                       "outside the %lld rows",
                       static_cast<long long>(r), static_cast<long long>(i), static_cast<long long>(rows));
    memmove(static_cast<Bytes1*>(out.mutable_data_ptr()) + static_cast<size_t>(i) * row_bytes,
            static_cast<const Bytes1*>(weight.const_data_ptr()) + static_cast<size_t>(r) * row_bytes, row_bytes);
  }
}

void amax_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dim, bool keepdim, Tensor& out) {
  // The dim walk and NaN rule every max/min reduction shares (util/reduce_util.h).
  amax_amin<selected_dtypes::amax_out_portable, true>(ctx, "amax.out", self, dim, keepdim, out);
}

}  // namespace portable
}  // namespace ember
