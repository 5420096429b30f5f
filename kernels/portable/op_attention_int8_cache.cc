// The int8 KV cache (schema/operators.yaml; PyTorch references in kernels/portable/llm_ops.py): a decode step reads
// every cached key and value row, so storing them as int8 with one float32 scale per (position, KV head) cuts the
// bytes it reads about 4x against a float32 cache.
//   * ember_llm::kv_row_scales.out: the scales of a step's new rows (max |x| / 127 over head_dim);
//   * ember_llm::quantize_kv_rows.out: the rows themselves, x / scale rounded half to even, as the reference does
//     (a division, so the int8 values match it bit for bit); the program writes both into its cache buffers with
//     index_put, in place, as a float cache's rows;
//   * ember_llm::sdpa_with_int8_cache.out: sdpa_with_cache (op_attention.cc) with each key row's dot product and
//     each value row's weight times its scale, so rows are dequantized only as they are read and never stored.
// Float only: the decoder's activations are float32, and the scales always are.
#include <math.h>

#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

namespace {

// x's rows (all dims but the last) and their length, for a contiguous float32 x.
bool kv_rows_checks(KernelContext& ctx, const char* name, const Tensor& x, int64_t* rows, int64_t* D) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, x.dim() >= 1 && x.scalar_type() == ScalarType::Float, InvalidArgument,
                              "%s: x must be float32 with at least 1 dim, got %d dims of %s", name,
                              static_cast<int>(x.dim()), scalar_type_name(x.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, x.is_contiguous(), NotSupported, "%s: only a contiguous x is supported", name);
  *D = x.size(x.dim() - 1);
  *rows = *D > 0 ? x.numel() / *D : 0;
  return true;
}

bool scales_fit(const Tensor& scales, const Tensor& x) {
  if (scales.dim() != x.dim() - 1 || scales.scalar_type() != ScalarType::Float || !scales.is_contiguous()) return false;
  for (int32_t d = 0; d + 1 < x.dim(); ++d) {
    if (scales.size(d) != x.size(d)) return false;
  }
  return true;
}

}  // namespace

void kv_row_scales_out(KernelContext& ctx, const Tensor& x, Tensor& out) {
  const char* name = "ember_llm::kv_row_scales.out";
  int64_t rows = 0, D = 0;
  if (!kv_rows_checks(ctx, name, x, &rows, &D)) return;
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Float, InvalidArgument, "%s: out must be float32, got %s",
                     name, scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, x.sizes().data(), static_cast<size_t>(x.dim() - 1)) && out.is_contiguous(),
                     InvalidArgument, "%s: out must be x's shape without its last dim (%lld)", name,
                     static_cast<long long>(D));
  const float* xp = x.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float mx = 0.0f;
    for (int64_t d = 0; d < D; ++d) mx = fmaxf(mx, fabsf(xp[r * D + d]));
    o[r] = mx / 127.0f;
  }
}

void quantize_kv_rows_out(KernelContext& ctx, const Tensor& x, const Tensor& scales, Tensor& out) {
  const char* name = "ember_llm::quantize_kv_rows.out";
  int64_t rows = 0, D = 0;
  if (!kv_rows_checks(ctx, name, x, &rows, &D)) return;
  EMBER_KERNEL_CHECK(ctx, scales_fit(scales, x), InvalidArgument,
                     "%s: scales must be contiguous float32 of x's shape without its last dim (%d dims), got %d dims "
                     "of %s",
                     name, static_cast<int>(x.dim() - 1), static_cast<int>(scales.dim()),
                     scalar_type_name(scales.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Char, InvalidArgument, "%s: out must be int8, got %s", name,
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, fit_output(out, x.sizes()) && out.is_contiguous(), InvalidArgument,
                     "%s: out must have x's shape", name);
  const float* xp = x.const_data_ptr<float>();
  const float* sp = scales.const_data_ptr<float>();
  int8_t* o = out.mutable_data_ptr<int8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const float s = sp[r];
    for (int64_t d = 0; d < D; ++d) {
      // nearbyintf rounds half to even in the default rounding mode, as torch.round.
      const float v = s > 0.0f ? nearbyintf(xp[r * D + d] / s) : 0.0f;
      o[r * D + d] = static_cast<int8_t>(v < -127.0f ? -127.0f : (v > 127.0f ? 127.0f : v));
    }
  }
}

KernelMemory sdpa_with_int8_cache_memory(const KernelArgs& args) {
  const ArrayRef<int32_t> query = args.sizes(0), cache = args.sizes(1);
  if (query.size() != 4 || cache.size() != 4 || cache[1] <= 0 || query[3] < 0) return {};
  return {0, (static_cast<size_t>(cache[1]) + static_cast<size_t>(query[3])) * sizeof(float)};
}

bool sdpa_with_int8_cache_checks(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                                 const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                                 const Tensor& input_pos, Tensor& out, int64_t* start) {
  const char* name = "ember_llm::sdpa_with_int8_cache.out";
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
                              "%s: batch 1, key and value caches of one shape, and head_dim %lld in them; got query "
                              "[%lld, %lld, %lld, %lld], key cache [%lld, %lld, %lld, %lld], value cache [%lld, %lld, "
                              "%lld, %lld]",
                              name, static_cast<long long>(D), static_cast<long long>(query.size(0)),
                              static_cast<long long>(T), static_cast<long long>(H), static_cast<long long>(D),
                              static_cast<long long>(key_cache.size(0)), static_cast<long long>(S),
                              static_cast<long long>(KV), static_cast<long long>(key_cache.size(3)),
                              static_cast<long long>(value_cache.size(0)), static_cast<long long>(value_cache.size(1)),
                              static_cast<long long>(value_cache.size(2)), static_cast<long long>(value_cache.size(3)));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, KV > 0 && H % KV == 0, InvalidArgument,
                              "%s: %lld query heads are not a multiple of %lld KV heads", name,
                              static_cast<long long>(H), static_cast<long long>(KV));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              query.scalar_type() == ScalarType::Float && out.scalar_type() == ScalarType::Float &&
                                  key_cache.scalar_type() == ScalarType::Char &&
                                  value_cache.scalar_type() == ScalarType::Char,
                              InvalidArgument,
                              "%s: query and out must be float32 and the caches int8, got %s, %s, %s and %s", name,
                              scalar_type_name(query.scalar_type()), scalar_type_name(out.scalar_type()),
                              scalar_type_name(key_cache.scalar_type()), scalar_type_name(value_cache.scalar_type()));
  const bool key_scales_ok = key_scales.dim() == 3 && key_scales.size(0) == 1 && key_scales.size(1) == S &&
                             key_scales.size(2) == KV && key_scales.scalar_type() == ScalarType::Float;
  const bool value_scales_ok = value_scales.dim() == 3 && value_scales.size(0) == 1 && value_scales.size(1) == S &&
                               value_scales.size(2) == KV && value_scales.scalar_type() == ScalarType::Float;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, key_scales_ok && value_scales_ok, InvalidArgument,
                              "%s: key and value scales must be float32 [1, %lld, %lld] (one per cache row), got %d-d "
                              "%s and %d-d %s",
                              name, static_cast<long long>(S), static_cast<long long>(KV),
                              static_cast<int>(key_scales.dim()), scalar_type_name(key_scales.scalar_type()),
                              static_cast<int>(value_scales.dim()), scalar_type_name(value_scales.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input_pos.scalar_type() == ScalarType::Long && input_pos.numel() == 1,
                              InvalidArgument, "%s: input_pos must be one int64, got %s with %lld elements", name,
                              scalar_type_name(input_pos.scalar_type()), static_cast<long long>(input_pos.numel()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              query.is_contiguous() && key_cache.is_contiguous() && value_cache.is_contiguous() &&
                                  key_scales.is_contiguous() && value_scales.is_contiguous(),
                              NotSupported, "%s: only contiguous tensors are supported", name);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, query.sizes()) && out.is_contiguous(), InvalidArgument,
                              "%s: out must have the query's shape", name);
  const int64_t p = input_pos.const_data_ptr<int64_t>()[0];
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, p >= 0 && p <= S - T, InvalidArgument,
                              "%s: positions %lld .. %lld do not fit a cache of %lld", name, static_cast<long long>(p),
                              static_cast<long long>(p + T - 1), static_cast<long long>(S));
  *start = p;
  return true;
}

void sdpa_with_int8_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                              const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                              const Tensor& input_pos, double scale, Tensor& out) {
  const char* name = "ember_llm::sdpa_with_int8_cache.out";
  int64_t p = 0;
  if (!sdpa_with_int8_cache_checks(ctx, query, key_cache, key_scales, value_cache, value_scales, input_pos, out, &p)) {
    return;
  }
  const int64_t T = query.size(1), H = query.size(2), D = query.size(3);
  const int64_t S = key_cache.size(1), KV = key_cache.size(2);
  const size_t need = static_cast<size_t>(S + D) * sizeof(float);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= need, MemoryAllocationFailed, "%s: %zu bytes of scratch, needs %zu",
                     name, ctx.scratch().size(), need);
  float* scores = reinterpret_cast<float*>(ctx.scratch().data());
  float* acc = scores + S;
  const float* q = query.const_data_ptr<float>();
  const int8_t* k = key_cache.const_data_ptr<int8_t>();
  const int8_t* v = value_cache.const_data_ptr<int8_t>();
  const float* ks = key_scales.const_data_ptr<float>();
  const float* vs = value_scales.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  const int64_t group = H / KV;
  const float sc = static_cast<float>(scale);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t visible = p + t + 1;
    for (int64_t h = 0; h < H; ++h) {
      const float* qr = q + (t * H + h) * D;
      const int64_t kv = h / group;
      float mx = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        const int8_t* kr = k + (j * KV + kv) * D;
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += qr[d] * static_cast<float>(kr[d]);
        // The row's scale once per dot product instead of once per element: the same value up to rounding.
        scores[j] = dot * ks[j * KV + kv] * sc;
        if (scores[j] > mx) mx = scores[j];
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = expf(scores[j] - mx);
        sum += scores[j];
      }
      for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
      for (int64_t j = 0; j < visible; ++j) {
        const int8_t* vr = v + (j * KV + kv) * D;
        const float w = scores[j] * vs[j * KV + kv];
        for (int64_t d = 0; d < D; ++d) acc[d] += w * static_cast<float>(vr[d]);
      }
      float* orow = o + (t * H + h) * D;
      for (int64_t d = 0; d < D; ++d) orow[d] = acc[d] / sum;
    }
  }
}

}  // namespace portable
}  // namespace ember
