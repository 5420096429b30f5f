// ember_llm::sdpa_with_cache.out: causal attention of T new query positions against a KV cache read in place
// (schema/operators.yaml). Position t of the query attends to cache rows 0 .. p + t (p = input_pos[0]), which the
// program wrote before this call; rows after p + T - 1 are never read, and no mask is built. One row of scores
// (max_seq_len values of the compute type) and one output row's sums (head_dim values) live in planned scratch
// (sdpa_with_cache_memory); value rows are read whole, in order.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

KernelMemory sdpa_with_cache_memory(const KernelArgs& args) {
  const ArrayRef<int32_t> query = args.sizes(0), cache = args.sizes(1);
  if (query.size() != 4 || cache.size() != 4 || cache[1] <= 0 || query[3] < 0) return {};
  const size_t item = args.dtype(0) == ScalarType::Double ? sizeof(double) : sizeof(float);
  return {0, (static_cast<size_t>(cache[1]) + static_cast<size_t>(query[3])) * item};
}

// Shared with kernels/optimized's Float kernel. Sets *start to input_pos[0].
bool sdpa_with_cache_checks(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                            const Tensor& input_pos, Tensor& out, int64_t* start) {
  const char* name = "ember_llm::sdpa_with_cache.out";
  EMBER_KERNEL_CHECK_OR_FALSE(
      ctx, query.dim() == 4 && key_cache.dim() == 4 && value_cache.dim() == 4, InvalidArgument,
      "%s: query and caches must be 4-d ([1, T, heads, head_dim], [1, max_seq_len, kv_heads, head_dim]), got %d-d, "
      "%d-d and %d-d",
      name, static_cast<int>(query.dim()), static_cast<int>(key_cache.dim()), static_cast<int>(value_cache.dim()));
  const int64_t T = query.size(1), H = query.size(2), D = query.size(3);
  const int64_t S = key_cache.size(1), KV = key_cache.size(2);
  bool same_caches = true;
  for (int32_t d = 0; d < 4; ++d) same_caches = same_caches && key_cache.size(d) == value_cache.size(d);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              query.size(0) == 1 && key_cache.size(0) == 1 && same_caches && key_cache.size(3) == D,
                              InvalidArgument,
                              "%s: batch 1, equal key and value caches, and head_dim %lld in the caches", name,
                              static_cast<long long>(D));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, KV > 0 && H % KV == 0, InvalidArgument,
                              "%s: %lld query heads are not a multiple of %lld KV heads", name,
                              static_cast<long long>(H), static_cast<long long>(KV));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              key_cache.scalar_type() == query.scalar_type() &&
                                  value_cache.scalar_type() == query.scalar_type() &&
                                  out.scalar_type() == query.scalar_type(),
                              InvalidArgument, "%s: query, caches and out must share a dtype, got %s, %s, %s and %s",
                              name, scalar_type_name(query.scalar_type()), scalar_type_name(key_cache.scalar_type()),
                              scalar_type_name(value_cache.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input_pos.scalar_type() == ScalarType::Long && input_pos.numel() == 1,
                              InvalidArgument, "%s: input_pos must be one int64, got %s with %lld elements", name,
                              scalar_type_name(input_pos.scalar_type()), static_cast<long long>(input_pos.numel()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, query.is_contiguous() && key_cache.is_contiguous() && value_cache.is_contiguous(),
                              NotSupported, "%s: only contiguous tensors are supported", name);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, query.sizes()) && out.is_contiguous(), InvalidArgument,
                              "%s: out must have the query's shape", name);
  const int64_t p = input_pos.const_data_ptr<int64_t>()[0];
  // The caller wrote rows p .. p + T - 1 before this call: beyond the cache, those writes were refused already,
  // and reading here is refused the same way.
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, p >= 0 && p <= S - T, InvalidArgument,
                              "%s: positions %lld .. %lld do not fit a cache of %lld", name, static_cast<long long>(p),
                              static_cast<long long>(p + T - 1), static_cast<long long>(S));
  *start = p;
  return true;
}

void sdpa_with_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                         const Tensor& input_pos, double scale, Tensor& out) {
  const char* name = "ember_llm::sdpa_with_cache.out";
  int64_t p = 0;
  if (!sdpa_with_cache_checks(ctx, query, key_cache, value_cache, input_pos, out, &p)) return;
  const int64_t T = query.size(1), H = query.size(2), D = query.size(3);
  const int64_t S = key_cache.size(1), KV = key_cache.size(2);
  constexpr uint32_t kMask = selected_dtypes::sdpa_with_cache_out_portable;
  EMBER_DISPATCH(ctx, name, kMask, query.scalar_type(), [&](auto tag) {
    using T_ = typename decltype(tag)::type;
    using C = compute_t<T_>;
    const size_t need = static_cast<size_t>(S + D) * sizeof(C);
    EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= need, MemoryAllocationFailed, "%s: %zu bytes of scratch, needs %zu",
                       name, ctx.scratch().size(), need);
    C* scores = reinterpret_cast<C*>(ctx.scratch().data());
    C* acc = scores + S;
    const T_* q = query.const_data_ptr<T_>();
    const T_* k = key_cache.const_data_ptr<T_>();
    const T_* v = value_cache.const_data_ptr<T_>();
    T_* o = out.mutable_data_ptr<T_>();
    const int64_t group = H / KV;
    const C s = static_cast<C>(scale);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t visible = p + t + 1;
      for (int64_t h = 0; h < H; ++h) {
        const T_* qr = q + (t * H + h) * D;
        const int64_t kv = h / group;
        C mx = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          const T_* kr = k + (j * KV + kv) * D;
          C dot = C(0);
          for (int64_t d = 0; d < D; ++d) dot += static_cast<C>(qr[d]) * static_cast<C>(kr[d]);
          scores[j] = dot * s;
          if (scores[j] > mx) mx = scores[j];
        }
        C sum = C(0);
        for (int64_t j = 0; j < visible; ++j) {
          scores[j] = exp(scores[j] - mx);
          sum += scores[j];
        }
        for (int64_t d = 0; d < D; ++d) acc[d] = C(0);
        for (int64_t j = 0; j < visible; ++j) {
          const T_* vr = v + (j * KV + kv) * D;
          const C w = scores[j];
          for (int64_t d = 0; d < D; ++d) acc[d] += w * static_cast<C>(vr[d]);
        }
        T_* orow = o + (t * H + h) * D;
        for (int64_t d = 0; d < D; ++d) orow[d] = static_cast<T_>(acc[d] / sum);
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
