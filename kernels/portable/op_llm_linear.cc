// ember_llm::linear.out, ember_llm::linear_int8.out and ember_llm::linear_8da4w.out (schema/operators.yaml; PyTorch references in
// kernels/portable/llm_ops.py): the decoder's linear layers with int8 or packed int4 weights. Reference loops:
// kernels/optimized/op_llm_linear.cc is the fast path for Float. The 8da4w activations are quantized here exactly
// as the reference does (float32 division, round half to even), a tile of tokens at a time into planned scratch,
// and each group's products are summed in int32, so only the float steps after the sums differ in order. Both weight
// layouts of linear_8da4w (schema/operators.yaml) run here; the blocked one gives the row one's bits.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

namespace {

// x, bias and out of a linear with N output features (either weight layout).
bool llm_linear_io_checks(KernelContext& ctx, const char* name, const Tensor& x, int64_t N, const Tensor* bias,
                          Tensor& out, LlmLinearShape* shape) {
  const int64_t K = x.size(x.dim() - 1);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, bias == nullptr || (bias->scalar_type() == x.scalar_type() && bias->numel() == N),
                              InvalidArgument, "%s: bias must hold %lld values of x's dtype", name,
                              static_cast<long long>(N));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, out.scalar_type() == x.scalar_type(), InvalidArgument,
                              "%s: out must have x's dtype %s, got %s", name, scalar_type_name(x.scalar_type()),
                              scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, x.is_contiguous() && (bias == nullptr || bias->is_contiguous()), NotSupported,
                              "%s: only contiguous tensors are supported", name);
  int32_t sizes[kMaxTensorDim];
  for (int32_t d = 0; d < x.dim(); ++d) sizes[d] = x.size(d);
  sizes[x.dim() - 1] = static_cast<int32_t>(N);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, sizes, static_cast<size_t>(x.dim())) && out.is_contiguous(),
                              InvalidArgument, "%s: out must be x's shape with %lld last", name,
                              static_cast<long long>(N));
  shape->M = K == 0 ? 0 : x.numel() / K;
  shape->K = K;
  shape->N = N;
  return true;
}

}  // namespace

bool llm_linear_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight,
                       ScalarType weight_type, int64_t packed_k_divisor, const Tensor& scales, int64_t scale_cols,
                       const Tensor* bias, Tensor& out, LlmLinearShape* shape) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, x.dim() >= 1 && x.dim() <= kMaxTensorDim && weight.dim() == 2, InvalidArgument,
                              "%s: x must have at least 1 dim and weight 2, got %d and %d", name,
                              static_cast<int>(x.dim()), static_cast<int>(weight.dim()));
  const int64_t K = x.size(x.dim() - 1), N = weight.size(0);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.scalar_type() == weight_type, InvalidArgument,
                              "%s: weight must be %s, got %s", name, scalar_type_name(weight_type),
                              scalar_type_name(weight.scalar_type()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.size(1) * packed_k_divisor == K, InvalidArgument,
                              "%s: weight [%lld, %lld] does not match %lld input channels", name,
                              static_cast<long long>(N), static_cast<long long>(weight.size(1)),
                              static_cast<long long>(K));
  const bool scales_ok = scale_cols == 0 ? scales.dim() == 1 && scales.size(0) == N
                                         : scales.dim() == 2 && scales.size(0) == N && scales.size(1) == scale_cols;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, scales.scalar_type() == ScalarType::Float && scales_ok, InvalidArgument,
                              "%s: scales must be float32 [%lld%s], got %s with %d dims", name,
                              static_cast<long long>(N), scale_cols ? ", groups" : "",
                              scalar_type_name(scales.scalar_type()), static_cast<int>(scales.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.is_contiguous() && scales.is_contiguous(), NotSupported,
                              "%s: only contiguous tensors are supported", name);
  return llm_linear_io_checks(ctx, name, x, N, bias, out, shape);
}

// ---- linear ----------------------------------------------------------------------------------------------------

namespace {

// A dense weight of `type` (ember_llm::linear, linear_int8): [N, K], or blocked [N / 16, K, 16].
bool dense_weight_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight, ScalarType type,
                         int64_t* N, bool* blocked) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, x.dim() >= 1 && x.dim() <= kMaxTensorDim, InvalidArgument,
                              "%s: x must have 1 to %d dims, got %d", name, kMaxTensorDim, static_cast<int>(x.dim()));
  const int64_t K = x.size(x.dim() - 1);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.scalar_type() == type, InvalidArgument, "%s: weight must be %s, got %s", name,
                              scalar_type_name(type), scalar_type_name(weight.scalar_type()));
  *blocked = weight.dim() == 3;
  const bool fits =
      *blocked ? weight.size(1) == K && weight.size(2) == kChannelBlock : weight.dim() == 2 && weight.size(1) == K;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fits, InvalidArgument,
                              "%s: weight must be [N, %lld] or blocked [N / %d, %lld, %d], got %d dims", name,
                              static_cast<long long>(K), kChannelBlock, static_cast<long long>(K), kChannelBlock,
                              static_cast<int>(weight.dim()));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, weight.is_contiguous(), NotSupported, "%s: only contiguous tensors are supported",
                              name);
  *N = *blocked ? weight.size(0) * kChannelBlock : weight.size(0);
  return true;
}

}  // namespace

bool linear_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight, const Tensor* bias,
                   Tensor& out, LlmLinearShape* shape) {
  int64_t N = 0;
  bool blocked = false;
  if (!dense_weight_checks(ctx, name, x, weight, x.scalar_type(), &N, &blocked)) return false;
  if (!llm_linear_io_checks(ctx, name, x, N, bias, out, shape)) return false;
  shape->blocked = blocked;
  return true;
}

bool linear_int8_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight,
                        const Tensor& scales, const Tensor* bias, Tensor& out, LlmLinearShape* shape) {
  int64_t N = 0;
  bool blocked = false;
  if (!dense_weight_checks(ctx, name, x, weight, ScalarType::Char, &N, &blocked)) return false;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              scales.scalar_type() == ScalarType::Float && scales.dim() == 1 && scales.size(0) == N &&
                                  scales.is_contiguous(),
                              InvalidArgument, "%s: scales must be contiguous float32 [%lld], got %s with %d dims",
                              name, static_cast<long long>(N), scalar_type_name(scales.scalar_type()),
                              static_cast<int>(scales.dim()));
  if (!llm_linear_io_checks(ctx, name, x, N, bias, out, shape)) return false;
  shape->blocked = blocked;
  return true;
}

// Weight element (n, k) of either dense layout.
inline int64_t dense_index(const LlmLinearShape& s, int64_t n, int64_t k) {
  return s.blocked ? (n / kChannelBlock) * s.K * kChannelBlock + k * kChannelBlock + n % kChannelBlock : n * s.K + k;
}

// out[m, n] = (sum_k x[m, k] * w[n, k]) * scales[n] + bias[n] over either dense layout, summed in C; scales null for
// float weights (ember_llm::linear), so both dense linears share one loop.
template <typename T, typename C, typename W>
void dense_linear(const LlmLinearShape& s, const T* xs, const W* w, const float* sc, const T* b, T* o) {
  for (int64_t m = 0; m < s.M; ++m) {
    const T* xr = xs + m * s.K;
    for (int64_t n = 0; n < s.N; ++n) {
      C acc = C(0);
      for (int64_t k = 0; k < s.K; ++k) acc += static_cast<C>(xr[k]) * static_cast<C>(w[dense_index(s, n, k)]);
      if (sc) acc *= static_cast<C>(sc[n]);
      if (b) acc += static_cast<C>(b[n]);
      o[m * s.N + n] = static_cast<T>(acc);
    }
  }
}

void linear_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out) {
  const char* name = "ember_llm::linear.out";
  LlmLinearShape s;
  if (!linear_checks(ctx, name, x, weight, bias, out, &s)) return;
  constexpr uint32_t kMask = selected_dtypes::linear_out_portable;
  EMBER_DISPATCH(ctx, name, kMask, x.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    dense_linear<T, C>(s, x.const_data_ptr<T>(), weight.const_data_ptr<T>(), nullptr,
                       bias ? bias->const_data_ptr<T>() : nullptr, out.mutable_data_ptr<T>());
  });
}

// ---- linear_int8 --------------------------------------------------------------------------------------------

void linear_int8_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& scales,
                     const Tensor* bias, Tensor& out) {
  const char* name = "ember_llm::linear_int8.out";
  LlmLinearShape s;
  if (!linear_int8_checks(ctx, name, x, weight, scales, bias, out, &s)) return;
  constexpr uint32_t kMask = selected_dtypes::linear_int8_out_portable;
  EMBER_DISPATCH(ctx, name, kMask, x.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    dense_linear<T, C>(s, x.const_data_ptr<T>(), weight.const_data_ptr<int8_t>(), scales.const_data_ptr<float>(),
                       bias ? bias->const_data_ptr<T>() : nullptr, out.mutable_data_ptr<T>());
  });
}

// ---- linear_8da4w -------------------------------------------------------------------------------------------

namespace {
// Bytes of linear_8da4w_int8_tokens' layout for `tile` tokens of K channels in groups of `group`.
size_t int8_tokens_bytes(size_t tile, size_t K, size_t group) {
  return round16(tile * K) + round16(tile * (K / group + 1) * sizeof(int32_t)) + round16(tile * sizeof(float));
}
}  // namespace

size_t linear_8da4w_scratch_bytes(int64_t tokens, int64_t K, bool blocked) {
  if (tokens <= 0 || K <= 0) return 0;
  const size_t tile = static_cast<size_t>(tokens < kLlmTokenTile ? tokens : kLlmTokenTile);
  const size_t int16_rows = round16(tile * static_cast<size_t>(K) * sizeof(int16_t)) + round16(tile * sizeof(float));
  // The int8 layout at the smallest group (the most group terms), for a chunk of tokens on the blocked layout.
  const size_t chunk = static_cast<size_t>(tokens < kLlmTokenChunk ? tokens : kLlmTokenChunk);
  const size_t int8_rows = int8_tokens_bytes(blocked ? chunk : tile, static_cast<size_t>(K), kInt4Block);
  return int16_rows > int8_rows ? int16_rows : int8_rows;
}

KernelMemory linear_8da4w_memory(const KernelArgs& args) {
  const ArrayRef<int32_t> x = args.sizes(0);
  if (x.size() == 0) return {};
  int64_t tokens = 1;
  for (size_t d = 0; d + 1 < x.size(); ++d) tokens *= x[d] < 0 ? 0 : x[d];
  return {0, linear_8da4w_scratch_bytes(tokens, x[x.size() - 1], args.sizes(1).size() == 3)};
}

bool linear_8da4w_checks(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                         int64_t group_size, const Tensor* bias, Tensor& out, LlmLinearShape* shape) {
  const char* name = "ember_llm::linear_8da4w.out";
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              group_size >= kInt4Block && group_size % kInt4Block == 0 && x.dim() >= 1 &&
                                  x.size(x.dim() - 1) % group_size == 0,
                              InvalidArgument,
                              "%s: group_size %lld must be a multiple of %d dividing the %lld input "
                              "channels",
                              name, static_cast<long long>(group_size), kInt4Block,
                              static_cast<long long>(x.dim() >= 1 ? x.size(x.dim() - 1) : 0));
  const int64_t K = x.size(x.dim() - 1), groups = K / group_size;
  if (packed_weight.dim() == 3) {
    // The blocked layout: [N / 16, K / 8, 64] bytes and [N / 16, groups, 16] scales.
    const int64_t blocks = packed_weight.size(0);
    EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                                x.dim() <= kMaxTensorDim && packed_weight.scalar_type() == ScalarType::Byte &&
                                    packed_weight.size(1) * 8 == K && packed_weight.size(2) == 64,
                                InvalidArgument,
                                "%s: a blocked weight must be uint8 [N / 16, %lld, 64] for %lld "
                                "input channels, got %s [%lld, %lld, %lld]",
                                name, static_cast<long long>(K / 8), static_cast<long long>(K),
                                scalar_type_name(packed_weight.scalar_type()), static_cast<long long>(blocks),
                                static_cast<long long>(packed_weight.size(1)),
                                static_cast<long long>(packed_weight.size(2)));
    EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                                scales.scalar_type() == ScalarType::Float && scales.dim() == 3 &&
                                    scales.size(0) == blocks && scales.size(1) == groups &&
                                    scales.size(2) == kInt4ChannelBlock,
                                InvalidArgument,
                                "%s: blocked scales must be float32 [%lld, %lld, 16], got %s with "
                                "%d dims",
                                name, static_cast<long long>(blocks), static_cast<long long>(groups),
                                scalar_type_name(scales.scalar_type()), static_cast<int>(scales.dim()));
    EMBER_KERNEL_CHECK_OR_FALSE(ctx, packed_weight.is_contiguous() && scales.is_contiguous(), NotSupported,
                                "%s: only contiguous tensors are supported", name);
    if (!llm_linear_io_checks(ctx, name, x, blocks * kInt4ChannelBlock, bias, out, shape)) return false;
    shape->blocked = true;
  } else if (!llm_linear_checks(ctx, name, x, packed_weight, ScalarType::Byte, 2, scales, groups, bias, out, shape)) {
    return false;
  }
  const size_t need = linear_8da4w_scratch_bytes(shape->M, shape->K, shape->blocked);
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, ctx.scratch().size() >= need, MemoryAllocationFailed,
                              "%s: %zu bytes of scratch, needs %zu", name, ctx.scratch().size(), need);
  return true;
}

namespace {

// Round half to even for |v| < 2^22 in the default rounding mode, as torch.round: adding 1.5 * 2^23 leaves no
// fraction bits. Not nearbyintf: that import from libm alone cost every runner's dynamic symbol table 37 bytes
// (tests/size), kernels linked or not. Here |v| <= 383 (x / s is within 255 of 0, and -128 - lo / s within 383).
inline float round_half_even_small(float v) {
  const float magic = 12582912.0f;
  return (v + magic) - magic;
}

// Clamp to -128 .. 127, NaN to -128 (a NaN input's value is undefined anyway; the conversion to int must not be).
inline float clamp_i8(float v) {
  v = v > 127.0f ? 127.0f : v;
  return v >= -128.0f ? v : -128.0f;
}

// The reference's quantize_per_token on x.to(float32), exactly: float32 division, round half to even, clamps.
// Hands the token's z to begin(z) and each q to put(k, q); returns the token's scale.
template <typename T, class Begin, class Put>
float quantize_row(const T* xr, int64_t K, Begin&& begin, Put&& put) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float v = static_cast<float>(xr[k]);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  float s = (hi - lo) / 255.0f;
  if (s == 0.0f) s = 1.0f;
  const float z = clamp_i8(round_half_even_small(-128.0f - lo / s));
  begin(static_cast<int32_t>(z));
  for (int64_t k = 0; k < K; ++k) {
    put(k, static_cast<int32_t>(clamp_i8(round_half_even_small(static_cast<float>(xr[k]) / s) + z)));
  }
  return s;
}

// Stores q - z (-255 .. 255) so the group sums need no zero-point term.
template <typename T>
void quantize_rows(const T* x, int64_t rows, int64_t K, int16_t* d, float* token_scale) {
  for (int64_t t = 0; t < rows; ++t) {
    int16_t* dr = d + t * K;
    int32_t zi = 0;
    token_scale[t] = quantize_row(
        x + t * K, K, [&](int32_t z) { zi = z; }, [&](int64_t k, int32_t q) { dr[k] = static_cast<int16_t>(q - zi); });
  }
}

}  // namespace

void quantize_tokens_8da4w(const float* x, int64_t rows, int64_t K, int16_t* d, float* token_scale) {
  quantize_rows(x, rows, K, d, token_scale);
}

Int8Tokens linear_8da4w_int8_tokens(KernelContext& ctx, int64_t M, int64_t K, int64_t group) {
  const size_t tile = static_cast<size_t>(M);
  uint8_t* base = ctx.scratch().data();
  const size_t q_bytes = round16(tile * static_cast<size_t>(K));
  const size_t term_bytes = round16(tile * static_cast<size_t>(K / group + 1) * sizeof(int32_t));
  return {reinterpret_cast<int8_t*>(base), reinterpret_cast<int32_t*>(base + q_bytes),
          reinterpret_cast<float*>(base + q_bytes + term_bytes)};
}

void quantize_tokens_8da4w_int8(const float* x, int64_t rows, int64_t K, int64_t group, const Int8Tokens& out) {
  const int64_t G = K / group;
  for (int64_t t = 0; t < rows; ++t) {
    int8_t* qr = out.q + t * K;
    int32_t* terms = out.terms + t * (G + 1);
    int32_t zi = 0, sum = 0;
    out.scale[t] = quantize_row(
        x + t * K, K,
        [&](int32_t z) {
          zi = z;
          terms[0] = z;
        },
        [&](int64_t k, int32_t q) {
          qr[k] = static_cast<int8_t>(q);
          sum += q - zi;
          if ((k + 1) % group == 0) {
            terms[1 + k / group] = -8 * sum;
            sum = 0;
          }
        });
  }
}

int16_t* linear_8da4w_tokens(KernelContext& ctx, int64_t M, int64_t K, float** token_scale) {
  const size_t tile = static_cast<size_t>(M < kLlmTokenTile ? M : kLlmTokenTile);
  *token_scale = reinterpret_cast<float*>(ctx.scratch().data() + round16(tile * K * sizeof(int16_t)));
  return reinterpret_cast<int16_t*>(ctx.scratch().data());
}

namespace {

// Where one channel's nibbles and scales lie: runs of `len` bytes (2 * len inputs: the low nibbles, then the high
// ones) `stride` bytes apart, and its group scales `scale_stride` floats apart.
struct Int4Runs {
  int64_t len, stride, scale_stride;
};

// One channel's sum over the groups of I * scale, I = sum (q - z) * w exact in int32, in group order. Out of the
// per-dtype loop: the dtypes share it.
float int4_dot(const int16_t* dr, const uint8_t* wn, const float* sn, const Int4Runs& runs, int64_t G, int64_t group) {
  float acc = 0.0f;
  for (int64_t g = 0; g < G; ++g) {
    int32_t isum = 0;
    for (int64_t k = g * group; k < (g + 1) * group; k += 2 * runs.len) {
      const uint8_t* run = wn + k / (2 * runs.len) * runs.stride;
      for (int64_t i = 0; i < runs.len; ++i) {
        isum += static_cast<int32_t>(dr[k + i]) * ((run[i] & 15) - 8);
        isum += static_cast<int32_t>(dr[k + runs.len + i]) * ((run[i] >> 4) - 8);
      }
    }
    acc += static_cast<float>(isum) * sn[g * runs.scale_stride];
  }
  return acc;
}

}  // namespace

void linear_8da4w_out(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                      int64_t group_size, const Tensor* bias, Tensor& out) {
  const char* name = "ember_llm::linear_8da4w.out";
  LlmLinearShape s;
  if (!linear_8da4w_checks(ctx, x, packed_weight, scales, group_size, bias, out, &s)) return;
  constexpr uint32_t kMask = selected_dtypes::linear_8da4w_out_portable;
  EMBER_DISPATCH(ctx, name, kMask, x.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t G = s.K / group_size;
    float* ts = nullptr;
    int16_t* d = linear_8da4w_tokens(ctx, s.M, s.K, &ts);
    const T* xs = x.const_data_ptr<T>();
    const uint8_t* w = packed_weight.const_data_ptr<uint8_t>();
    const float* sc = scales.const_data_ptr<float>();
    const T* b = bias ? bias->const_data_ptr<T>() : nullptr;
    T* o = out.mutable_data_ptr<T>();
    // Channel n's weights as runs of bytes: the row layout's 16-byte blocks (32 inputs) one after another, or the
    // blocked layout's 4-byte runs (8 inputs) 64 bytes apart, at 32h + 4c of each octet of its block of 16.
    const Int4Runs runs = s.blocked ? Int4Runs{4, 64, kInt4ChannelBlock} : Int4Runs{kInt4Block / 2, kInt4Block / 2, 1};
    for (int64_t m0 = 0; m0 < s.M; m0 += kLlmTokenTile) {
      const int64_t rows = s.M - m0 < kLlmTokenTile ? s.M - m0 : kLlmTokenTile;
      quantize_rows(xs + m0 * s.K, rows, s.K, d, ts);
      for (int64_t n = 0; n < s.N; ++n) {
        const int64_t blk = n / kInt4ChannelBlock, r = n % kInt4ChannelBlock;
        const uint8_t* wn = s.blocked ? w + blk * (s.K / 8) * 64 + r * 4 : w + n * (s.K / 2);
        const float* sn = s.blocked ? sc + blk * G * kInt4ChannelBlock + r : sc + n * G;
        for (int64_t t = 0; t < rows; ++t) {
          float v = int4_dot(d + t * s.K, wn, sn, runs, G, group_size) * ts[t];
          if (b) v += static_cast<float>(b[n]);
          o[(m0 + t) * s.N + n] = static_cast<T>(v);
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
