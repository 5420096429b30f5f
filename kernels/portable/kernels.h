// The portable kernel library: reference C++ for core ATen out-variant ops, one family per op_*.cc file.
// Signatures follow kernels/README.md; registration is generated from kernels.yaml.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

// op_binary.cc
void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void add_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out);
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void sub_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out);
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void mul_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void div_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);

// op_activation.cc
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out);
void sigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void tanh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void exp_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void gelu_out(KernelContext& ctx, const Tensor& self, StringView approximate, Tensor& out);
void log_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void sqrt_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void rsqrt_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void neg_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void abs_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void pow_tensor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& exponent, Tensor& out);
void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out);
void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out);

// op_linear.cc
void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out);
void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);

// op_convolution.cc
void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);
// ember::convolution_general.out: aten::convolution's transposed (1-3 d) and 3-d calls, which exir routes here.
void convolution_general_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                             bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);
// ember::convolution_clamp.out: the same, then out clamped to [min, max] (Float only).
void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out);
// ember::winograd_conv2d.out: a 3x3 stride-1 convolution from its Winograd-transformed filter, clamped (Float).
KernelMemory winograd_conv2d_memory(const KernelArgs& args);
void winograd_conv2d_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                         ArrayRef<int64_t> padding, double min, double max, Tensor& out);
// ember::convolution_silu.out: the same, then SiLU over out (Float only).
void convolution_silu_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);

// op_pool.cc
// ember::max_pool2d.out: max_pool2d_with_indices' values without the indices (Float).
void max_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode, Tensor& out);
void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices);
void avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    Optional<int64_t> divisor_override, Tensor& out);

// op_reduce.cc
void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out);
void sum_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
             Optional<int64_t> dtype, Tensor& out);

// op_softmax.cc
void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out);
void log_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out);
// ember::safe_softmax.out: softmax, with a slice that is -inf throughout written as zeros (attention's masking).
void safe_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);

// op_norm.cc
void native_layer_norm_out(KernelContext& ctx, const Tensor& input, ArrayRef<int64_t> normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2);
void native_batch_norm_legit_no_training_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                             const Tensor* bias, const Tensor& running_mean, const Tensor& running_var,
                                             double momentum, double eps, Tensor& out0, Tensor& out1, Tensor& out2);

// op_select.cc
void where_out(KernelContext& ctx, const Tensor& condition, const Tensor& self, const Tensor& other, Tensor& out);
void cat_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out);
void embedding_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                   bool scale_grad_by_freq, bool sparse, Tensor& out);
void amax_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dim, bool keepdim, Tensor& out);

// op_index.cc
void index_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices, Tensor& out);

// op_copy.cc
void to_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking, Optional<int64_t> memory_format,
                 Tensor& out);
void copy_(KernelContext& ctx, Tensor& self, const Tensor& src, bool non_blocking);
void clone_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> memory_format, Tensor& out);
void clone_dim_order_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                         Optional<ArrayRef<int64_t>> dim_order, Tensor& out);
void to_dim_order_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                           Optional<ArrayRef<int64_t>> dim_order, Tensor& out);
void view_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, Tensor& out);
void squeeze_copy_dims_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out);
void unsqueeze_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);
void permute_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out);
void expand_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, bool implicit, Tensor& out);
void slice_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Optional<int64_t> start, Optional<int64_t> end,
                    int64_t step, Tensor& out);
void select_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t index, Tensor& out);
void full_out(KernelContext& ctx, ArrayRef<int64_t> size, const Scalar& fill_value, Tensor& out);

// Reductions, selection, distances and normalisation family (issue 15).
// op_reduce.cc
void any_all_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void any_dims_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim, Tensor& out);
void any_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& out);
void mean_dtype_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dtype, Tensor& out);
void prod_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Optional<int64_t> dtype,
                  Tensor& out);
void prod_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dtype, Tensor& out);
void cumsum_out(KernelContext& ctx, const Tensor& self, int64_t dim, Optional<int64_t> dtype, Tensor& out);
// op_minmax.cc
void amin_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dim, bool keepdim, Tensor& out);
void argmax_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dim, bool keepdim, Tensor& out);
void argmin_out(KernelContext& ctx, const Tensor& self, Optional<int64_t> dim, bool keepdim, Tensor& out);
void max_dim_max_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& max,
                     Tensor& max_values);
void min_dim_min_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& min,
                     Tensor& min_indices);
void max_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void min_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out);
// op_var.cc
void var_correction_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim,
                        Optional<Scalar> correction, bool keepdim, Tensor& out);
void var_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool unbiased, bool keepdim,
             Tensor& out);
void var_mean_correction_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim,
                             Optional<Scalar> correction, bool keepdim, Tensor& out0, Tensor& out1);

// op_topk.cc
KernelMemory topk_memory(const KernelArgs& args);

// ember_llm::sdpa_with_cache.out (op_attention.cc): causal attention against a KV cache read in place.
void sdpa_with_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                         const Tensor& input_pos, double scale, Tensor& out);
KernelMemory sdpa_with_cache_memory(const KernelArgs& args);
// Its checks (shapes, dtypes, positions within the cache), shared with kernels/optimized; *start = input_pos[0].
bool sdpa_with_cache_checks(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                            const Tensor& input_pos, Tensor& out, int64_t* start);

// The int8 KV cache (op_attention_int8_cache.cc): the new rows' scales and int8 values, and attention that
// dequantizes the cache rows it reads. The attention's checks are shared with kernels/optimized.
void kv_row_scales_out(KernelContext& ctx, const Tensor& x, Tensor& out);
void quantize_kv_rows_out(KernelContext& ctx, const Tensor& x, const Tensor& scales, Tensor& out);
void sdpa_with_int8_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                              const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                              const Tensor& input_pos, double scale, Tensor& out);
KernelMemory sdpa_with_int8_cache_memory(const KernelArgs& args);
bool sdpa_with_int8_cache_checks(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                                 const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                                 const Tensor& input_pos, Tensor& out, int64_t* start);

// ember_llm::linear_int8.out and ember_llm::linear_8da4w.out (op_llm_linear.cc): linears with int8 or packed
// int4 weights. The checks, shapes and activation quantization are shared with kernels/optimized.
struct LlmLinearShape {
  int64_t M = 0, K = 0, N = 0;  // tokens (x's leading dims), input and output channels
  bool blocked = false;         // weights (and 8da4w's scales) in the blocked layout (16 channels a block)
};
constexpr int kInt4Block = 32;         // input channels per packed int4 block (16 bytes)
constexpr int kChannelBlock = 16;  // output channels per block of the blocked layouts (linear, int8, 8da4w)
constexpr int kInt4ChannelBlock = kChannelBlock;
constexpr int64_t kLlmTokenTile = 4;   // tokens quantized into scratch at a time by linear_8da4w
// Tokens quantized at once for the optimized kernels on linear_8da4w's blocked layout: each block of weights is read
// once per this many tokens (a prefill's), with the scratch bounded whatever the prompt's length.
constexpr int64_t kLlmTokenChunk = 64;
bool llm_linear_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight,
                       ScalarType weight_type, int64_t packed_k_divisor, const Tensor& scales, int64_t scale_cols,
                       const Tensor* bias, Tensor& out, LlmLinearShape* shape);
// ember_llm::linear's checks (weight [N, K] of x's dtype, or blocked [N / 16, K, 16]) and linear_int8's (int8
// weight, either layout; float32 scales [N]), shared with kernels/optimized.
bool linear_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight, const Tensor* bias,
                   Tensor& out, LlmLinearShape* shape);
bool linear_int8_checks(KernelContext& ctx, const char* name, const Tensor& x, const Tensor& weight,
                        const Tensor& scales, const Tensor* bias, Tensor& out, LlmLinearShape* shape);
void linear_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out);
void linear_int8_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& scales,
                     const Tensor* bias, Tensor& out);
void linear_8da4w_out(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                      int64_t group_size, const Tensor* bias, Tensor& out);
KernelMemory linear_8da4w_memory(const KernelArgs& args);
// Scratch for `tokens` rows of K: a tile of int16 rows (the row layout's kernels, and portable's on either layout)
// and, on the blocked layout, up to kLlmTokenChunk tokens' int8 rows (the optimized kernels quantize a chunk first,
// so each block of weights is read once per chunk, not once per tile).
size_t linear_8da4w_scratch_bytes(int64_t tokens, int64_t K, bool blocked);
bool linear_8da4w_checks(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                         int64_t group_size, const Tensor* bias, Tensor& out, LlmLinearShape* shape);
// Scratch layout: up to kLlmTokenTile rows of q - z (int16), then their scales.
int16_t* linear_8da4w_tokens(KernelContext& ctx, int64_t M, int64_t K, float** token_scale);
// Float rows quantized per token as the portable kernel does (kernels/optimized's 8da4w kernels share it).
void quantize_tokens_8da4w(const float* x, int64_t rows, int64_t K, int16_t* d, float* token_scale);
// The same tokens for int8 dot products (kernels/optimized on the blocked layout): q itself (int8) in rows of K,
// and per token G + 1 int32s, z and then -8 * sum (q - z) over each group of `group` channels, which turn a
// group's sum of q * (w + 8) into the exact sum of (q - z) * w once the weights' sum times z is taken off.
struct Int8Tokens {
  int8_t* q;
  int32_t* terms;  // [rows][G + 1]
  float* scale;    // [rows]
};
// The int8 layout for M tokens in scratch (the blocked layout's scratch holds kLlmTokenChunk tokens).
Int8Tokens linear_8da4w_int8_tokens(KernelContext& ctx, int64_t M, int64_t K, int64_t group);
void quantize_tokens_8da4w_int8(const float* x, int64_t rows, int64_t K, int64_t group, const Int8Tokens& out);
// ember_llm::embedding_int8.out and ember_llm::embedding_4bit.out (op_llm_embedding.cc): token embeddings with
// int8 rows (a scale per row) or packed int4 rows (linear_8da4w's layout, a scale per group).
void embedding_int8_out(KernelContext& ctx, const Tensor& weight, const Tensor& scales, const Tensor& indices,
                        Tensor& out);
void embedding_4bit_out(KernelContext& ctx, const Tensor& packed_weight, const Tensor& scales, int64_t group_size,
                        const Tensor& indices, Tensor& out);
void topk_values_out(KernelContext& ctx, const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                     Tensor& values, Tensor& indices);

// op_distance.cc
void cdist_forward_out(KernelContext& ctx, const Tensor& x1, const Tensor& x2, double p, Optional<int64_t> compute_mode,
                       Tensor& out);
void pdist_forward_out(KernelContext& ctx, const Tensor& self, double p, Tensor& out);

// op_norm.cc
void native_group_norm_out(KernelContext& ctx, const Tensor& input, const Tensor* weight, const Tensor* bias, int64_t N,
                           int64_t C, int64_t HxW, int64_t group, double eps, Tensor& out0, Tensor& out1, Tensor& out2);
void native_batch_norm_legit_out(KernelContext& ctx, const Tensor& input, const Tensor* weight, const Tensor* bias,
                                 Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                                 Tensor& out, Tensor& save_mean, Tensor& save_invstd);
void native_batch_norm_legit_no_stats_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                          const Tensor* bias, bool training, double momentum, double eps, Tensor& out,
                                          Tensor& save_mean, Tensor& save_invstd);

// op_split.cc: ops whose out is a Tensor[] list (exir's list-out lowering emits them).
void split_copy_tensor_out(KernelContext& ctx, const Tensor& self, int64_t split_size, int64_t dim, TensorList out);
void split_with_sizes_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> split_sizes, int64_t dim,
                               TensorList out);
void unbind_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, TensorList out);
// Spatial family (op_pad.cc, op_upsample.cc, op_grid_sampler.cc, op_pixel_shuffle.cc, op_spatial_backward.cc,
// and _adaptive_avg_pool2d in op_pool.cc)
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> output_size, Tensor& out);
void constant_pad_nd_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> pad, const Scalar& value,
                         Tensor& out);
void reflection_pad1d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void reflection_pad2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void reflection_pad3d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void replication_pad1d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void replication_pad2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void replication_pad3d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> padding, Tensor& out);
void upsample_bilinear2d_vec_out(KernelContext& ctx, const Tensor& input, Optional<ArrayRef<int64_t>> output_size,
                                 bool align_corners, Optional<ArrayRef<double>> scale_factors, Tensor& out);
void upsample_nearest2d_vec_out(KernelContext& ctx, const Tensor& input, Optional<ArrayRef<int64_t>> output_size,
                                Optional<ArrayRef<double>> scale_factors, Tensor& out);
void upsample_bilinear2d_aa_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> output_size,
                                bool align_corners, Optional<double> scales_h, Optional<double> scales_w, Tensor& out);
void grid_sampler_2d_out(KernelContext& ctx, const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                         int64_t padding_mode, bool align_corners, Tensor& out);
void pixel_shuffle_out(KernelContext& ctx, const Tensor& self, int64_t upscale_factor, Tensor& out);
void pixel_unshuffle_out(KernelContext& ctx, const Tensor& self, int64_t downscale_factor, Tensor& out);
void convolution_backward_out(KernelContext& ctx, const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                              Optional<ArrayRef<int64_t>> bias_sizes, ArrayRef<int64_t> stride,
                              ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                              ArrayRef<int64_t> output_padding, int64_t groups, ArrayRef<bool> output_mask,
                              Tensor& out0, Tensor& out1, Tensor& out2);
void max_pool2d_with_indices_backward_out(KernelContext& ctx, const Tensor& grad_output, const Tensor& self,
                                          ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                                          ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode,
                                          const Tensor& indices, Tensor& grad_input);
// binary family (issue 15): comparisons, bitwise and logical ops, division and the rest of the arithmetic
// (op_comparison.cc, op_bitwise.cc, op_division.cc, op_binary.cc, op_ternary.cc)
void eq_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void eq_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void ne_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void ne_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void lt_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void lt_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void le_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void le_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void gt_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void gt_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void ge_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void ge_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void bitwise_and_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void bitwise_and_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void bitwise_or_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void bitwise_or_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void bitwise_xor_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void bitwise_xor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void bitwise_left_shift_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void bitwise_left_shift_tensor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void bitwise_right_shift_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void bitwise_right_shift_tensor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void logical_and_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void logical_or_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void logical_xor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void atan2_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void floor_divide_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void fmod_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void fmod_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void remainder_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void remainder_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out);
void maximum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void minimum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void pow_scalar_out(KernelContext& ctx, const Scalar& self, const Tensor& exponent, Tensor& out);
void pow_tensor_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& exponent, Tensor& out);
void rsub_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out);
void div_scalar_mode_out(KernelContext& ctx, const Tensor& self, const Scalar& other,
                         Optional<StringView> rounding_mode, Tensor& out);
void div_out_mode(KernelContext& ctx, const Tensor& self, const Tensor& other, Optional<StringView> rounding_mode,
                  Tensor& out);
void clamp_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* min, const Tensor* max, Tensor& out);
void masked_fill_scalar_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, const Scalar& value,
                            Tensor& out);
// --- shape family (op_shape.cc: copies and views) ---
void as_strided_copy_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> size, ArrayRef<int64_t> stride,
                         Optional<int64_t> storage_offset, Tensor& out);
void copy_out(KernelContext& ctx, const Tensor& self, const Tensor& src, bool non_blocking, Tensor& out);
void diagonal_copy_out(KernelContext& ctx, const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2, Tensor& out);
void flip_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> dims, Tensor& out);
void narrow_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t start, int64_t length, Tensor& out);
void roll_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> shifts, ArrayRef<int64_t> dims, Tensor& out);
void repeat_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> repeats, Tensor& out);
void squeeze_copy_dim_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);
void stack_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out);
void t_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void transpose_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim0, int64_t dim1, Tensor& out);
void tril_out(KernelContext& ctx, const Tensor& self, int64_t diagonal, Tensor& out);
void unfold_copy_out(KernelContext& ctx, const Tensor& self, int64_t dimension, int64_t size, int64_t step,
                     Tensor& out);
void view_as_real_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void h2d_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void d2h_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void empty_dim_order_out(KernelContext& ctx, ArrayRef<int64_t> size, Optional<ArrayRef<int64_t>> dim_order,
                         Tensor& out);

// --- indexing family (op_indexing.cc) ---
void gather_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad,
                Tensor& out);
void index_select_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, Tensor& out);
void index_put_out(KernelContext& ctx, const Tensor& self, OptionalTensorList indices, const Tensor& values,
                   bool accumulate, Tensor& out);
void index_put_(KernelContext& ctx, Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate);
void masked_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, const Tensor& source, Tensor& out);
void masked_select_out(KernelContext& ctx, const Tensor& self, const Tensor& mask, Tensor& out);
void nonzero_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void repeat_interleave_tensor_out(KernelContext& ctx, const Tensor& repeats, Optional<int64_t> output_size,
                                  Tensor& out);
void scatter_src_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out);
void scatter_value_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                       Tensor& out);
void scatter_add_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out);
void select_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim, int64_t index,
                        Tensor& out);
void slice_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim, Optional<int64_t> start,
                       Optional<int64_t> end, int64_t step, Tensor& out);
// --- unary math, parametric activations, creation/fill/aliases and random (branch k-unary) ---
// op_unary.cc
void acos_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void acosh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void asin_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void asinh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void atan_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void atanh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void ceil_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void cos_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void cosh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void erf_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void expm1_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void floor_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void log10_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void log1p_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void log2_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void reciprocal_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void round_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void sign_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void sin_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void sinh_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void tan_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void trunc_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void isinf_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void isnan_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void logit_out(KernelContext& ctx, const Tensor& self, Optional<double> eps, Tensor& out);
void bitwise_not_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void logical_not_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void conj_physical_out(KernelContext& ctx, const Tensor& self, Tensor& out);

// op_elu_leaky_relu_glu.cc
void elu_out(KernelContext& ctx, const Tensor& self, const Scalar& alpha, const Scalar& scale,
             const Scalar& input_scale, Tensor& out);
void leaky_relu_out(KernelContext& ctx, const Tensor& self, const Scalar& negative_slope, Tensor& out);
void glu_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);

// op_creation.cc
void arange_out(KernelContext& ctx, const Scalar& end, Tensor& out);
void arange_start_out(KernelContext& ctx, const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out);
void empty_out(KernelContext& ctx, ArrayRef<int64_t> size, Optional<int64_t> memory_format, Tensor& out);
void fill_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& value, Tensor& out);
void fill_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& value, Tensor& out);
void full_like_out(KernelContext& ctx, const Tensor& self, const Scalar& fill_value, Optional<int64_t> memory_format,
                   Tensor& out);
void ones_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out);
void zeros_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out);
void scalar_tensor_out(KernelContext& ctx, const Scalar& s, Tensor& out);
void lift_fresh_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void detach_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void alias_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out);

// op_random.cc (generator: util/random_util.h)
void rand_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out);
void randn_out(KernelContext& ctx, ArrayRef<int64_t> size, Tensor& out);
void native_dropout_out(KernelContext& ctx, const Tensor& input, double p, Optional<bool> train, Tensor& out0,
                        Tensor& out1);

}  // namespace portable
}  // namespace ember
