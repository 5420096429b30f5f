// ember_llm::embedding_int8.out and ember_llm::embedding_4bit.out (schema/operators.yaml; PyTorch references in
// kernels/portable/llm_ops.py): a decoder's token embedding with its rows stored as int8 or packed int4, the table
// that dominates a small LLM's file (Qwen2-0.5B's 151,936 x 896 floats are 545 MB; int8 137 MB, int4 68 MB plus
// scales). Only the gathered rows are dequantized, in float32, and rounded once to the output's dtype, as the
// reference does; a lookup is a few rows per token, so these loops are the fast path too. The kernel is selected
// by its first tensor, the table (Char or Byte); the output's three float dtypes are always compiled in.
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

namespace {

constexpr uint32_t kOutTypes =
    dtype_bit(ScalarType::Float) | dtype_bit(ScalarType::Half) | dtype_bit(ScalarType::BFloat16);

// The checks both share: weight 2-d of `weight_type` with `packed` values per stored element, scales [V] or
// [V, groups] whose dtype is out's, indices Long or Int, out [*indices.shape, D]. Sets V and D.
bool embedding_checks(KernelContext& ctx, const char* name, const Tensor& weight, ScalarType weight_type,
                      int64_t packed, const Tensor& scales, int64_t groups, const Tensor& indices, Tensor& out,
                      int64_t* V, int64_t* D) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.dim() == 2 && weight.scalar_type() == weight_type, InvalidArgument,
                              "%s: weight must be a 2-d %s table, got %d dims of %s", name,
                              scalar_type_name(weight_type), static_cast<int>(weight.dim()),
                              scalar_type_name(weight.scalar_type()));
  *V = weight.size(0);
  *D = weight.size(1) * packed;
  const bool scales_ok = groups == 0 ? scales.dim() == 1 && scales.size(0) == *V
                                     : scales.dim() == 2 && scales.size(0) == *V && scales.size(1) == groups;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, scales_ok, InvalidArgument, "%s: scales must be [%lld%s] for a %lld-row table", name,
                              static_cast<long long>(*V), groups ? ", groups" : "", static_cast<long long>(*V));
  const ScalarType t = out.scalar_type();
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, scales.scalar_type() == t && (kOutTypes & dtype_bit(t)), InvalidArgument,
                              "%s: scales and out must share one of Float, Half, BFloat16, got %s and %s", name,
                              scalar_type_name(scales.scalar_type()), scalar_type_name(t));
  const ScalarType it = indices.scalar_type();
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, it == ScalarType::Long || it == ScalarType::Int, InvalidArgument,
                              "%s: indices must be Long or Int, got %s", name, scalar_type_name(it));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, indices.dim() + 1 <= kMaxTensorDim, InvalidArgument,
                              "%s: indices have %d dims, out would have more than %d", name,
                              static_cast<int>(indices.dim()), static_cast<int>(kMaxTensorDim));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.is_contiguous() && scales.is_contiguous() && indices.is_contiguous(),
                              NotSupported, "%s: only contiguous tensors are supported", name);
  int32_t shape[kMaxTensorDim];
  for (int32_t i = 0; i < indices.dim(); ++i) shape[i] = indices.size(i);
  shape[indices.dim()] = static_cast<int32_t>(*D);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              fit_output(out, shape, static_cast<size_t>(indices.dim() + 1)) && out.is_contiguous(),
                              InvalidArgument, "%s: out must be indices' shape with %lld last", name,
                              static_cast<long long>(*D));
  return true;
}

// Row r of indices, checked against the table (named by position and value).
bool row_of(KernelContext& ctx, const char* name, const Tensor& indices, int64_t i, int64_t V, int64_t* r) {
  *r = load_as<int64_t>(indices.const_data_ptr(), indices.scalar_type(), i);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, *r >= 0 && *r < V, InvalidArgument,
                              "%s: index %lld at position %lld is outside the table's rows 0 .. %lld", name,
                              static_cast<long long>(*r), static_cast<long long>(i), static_cast<long long>(V - 1));
  return true;
}

}  // namespace

void embedding_int8_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales, const Tensor& indices,
                        Tensor& out) {
  const char* name = "ember_llm::embedding_int8.out";
  int64_t V = 0, D = 0;
  if (!embedding_checks(ctx, name, weight, ScalarType::Char, 1, scales, 0, indices, out, &V, &D)) return;
  EMBER_DISPATCH(ctx, name, kOutTypes, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int8_t* w = weight.const_data_ptr<int8_t>();
    const T* sc = scales.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      int64_t r = 0;
      if (!row_of(ctx, name, indices, i, V, &r)) return;
      const int8_t* wr = w + r * D;
      const float s = static_cast<float>(sc[r]);
      T* orow = o + i * D;
      for (int64_t d = 0; d < D; ++d) orow[d] = static_cast<T>(static_cast<float>(wr[d]) * s);
    }
  });
}

void embedding_4bit_out(KernelContext& ctx, const Tensor& packed_weight, const Tensor& scales, int64_t group_size,
                        const Tensor& indices, Tensor& out) {
  const char* name = "ember_llm::embedding_4bit.out";
  const int64_t D_arg = packed_weight.dim() == 2 ? packed_weight.size(1) * 2 : 0;
  EMBER_KERNEL_CHECK(ctx, group_size > 0 && group_size % kInt4Block == 0 && D_arg % group_size == 0, InvalidArgument,
                     "%s: group_size %lld must be a multiple of %d dividing the row's %lld values", name,
                     static_cast<long long>(group_size), kInt4Block, static_cast<long long>(D_arg));
  int64_t V = 0, D = 0;
  if (!embedding_checks(ctx, name, packed_weight, ScalarType::Byte, 2, scales, D_arg / group_size, indices, out, &V,
                        &D)) {
    return;
  }
  EMBER_DISPATCH(ctx, name, kOutTypes, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const uint8_t* w = packed_weight.const_data_ptr<uint8_t>();
    const T* sc = scales.const_data_ptr<T>();
    const int64_t G = D / group_size;
    T* o = out.mutable_data_ptr<T>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      int64_t r = 0;
      if (!row_of(ctx, name, indices, i, V, &r)) return;
      const uint8_t* wr = w + r * (D / 2);
      const T* sr = sc + r * G;
      T* orow = o + i * D;
      // Block b's 16 bytes: value 32b + j in byte j's low nibble, 32b + 16 + j in its high one, each stored + 8.
      for (int64_t b = 0; b < D / kInt4Block; ++b) {
        const float s = static_cast<float>(sr[b * kInt4Block / group_size]);
        const uint8_t* bytes = wr + b * (kInt4Block / 2);
        T* ob = orow + b * kInt4Block;
        for (int j = 0; j < kInt4Block / 2; ++j) {
          ob[j] = static_cast<T>(static_cast<float>((bytes[j] & 15) - 8) * s);
          ob[j + kInt4Block / 2] = static_cast<T>(static_cast<float>((bytes[j] >> 4) - 8) * s);
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
