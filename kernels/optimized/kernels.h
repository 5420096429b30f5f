// The optimized kernel library: Float kernels for the ops that dominate inference time (matrix products,
// convolution, and the clamping activations that follow them), on the register-tiled GEMM in compute/gemm.h. Other
// dtypes go to the portable kernel of the same op.
// Signatures follow kernels/README.md; registration is generated from kernels.yaml.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace optimized {

// Whether this kernel computes `t` itself: Float, and Float selected for it (its selected_dtypes mask). Otherwise
// the op falls through to its portable kernel.
inline bool computes_float(uint32_t mask, const Tensor& t) {
  return t.scalar_type() == ScalarType::Float && ((mask >> static_cast<int>(ScalarType::Float)) & 1u);
}

// op_linear.cc
void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out);
void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);

// op_activation.cc
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out);
void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out);

// op_convolution.cc
void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);
// Their scratch (runtime/kernel/kernel_args.h): one K block of im2col panels or the depthwise bordered planes.
KernelMemory convolution_memory(const KernelArgs& args);
KernelMemory convolution_clamp_memory(const KernelArgs& args);
// ember::convolution_clamp.out: the same with out clamped to [min, max] as it is written.
void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out);
// ember::winograd_conv2d.out: a 3x3 convolution from its Winograd-transformed filter (op_winograd_conv2d.cc).
KernelMemory winograd_conv2d_memory(const KernelArgs& args);
void winograd_conv2d_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                         ArrayRef<int64_t> padding, double min, double max, Tensor& out);
// ember::convolution_silu.out: the same with out through SiLU, each block while it is in cache.
KernelMemory convolution_silu_memory(const KernelArgs& args);
void convolution_silu_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);

// op_quantized_conv2d.cc, op_quantized_linear.cc: ember_quantized::conv2d and linear on the int8 tiers of
// int8/level.h, ahead of kernels/quantized's scalar kernels (same checks, state prefix and bits), which take the calls
// these cannot.
KernelMemory quantized_conv2d_memory(const KernelArgs& args);
Error quantized_conv2d_prepare(const KernelArgs& args, void* state);
void quantized_conv2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                          const Tensor& weight, const Tensor& weight_scales, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          int64_t groups, double output_scale, int64_t output_zero_point, int64_t activation_min,
                          int64_t activation_max, Tensor& out);
KernelMemory quantized_linear_memory(const KernelArgs& args);
Error quantized_linear_prepare(const KernelArgs& args, void* state);
void quantized_linear_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                          const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, double output_scale,
                          int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);
// op_quantize.cc: quantize_per_tensor from float32 to int8 on the int8 tiers (other dtypes: kernels/quantized).
void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out);
// op_quantized_add.cc
void quantized_add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_pool.cc
// ember::max_pool2d.out: max_pool2d_with_indices' values without the indices (Float).
void max_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode, Tensor& out);
void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices);

// op_reduce.cc
void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out);

// Transformer kernels: op_norm.cc, op_softmax.cc, op_gelu.cc, op_binary.cc (the broadcast patterns they take are
// described there; others fall through to portable).
void native_layer_norm_out(KernelContext& ctx, const Tensor& input, ArrayRef<int64_t> normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2);
void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out);
void log_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out);
void safe_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out);
void gelu_out(KernelContext& ctx, const Tensor& self, StringView approximate, Tensor& out);

// op_sigmoid.cc
void sigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void silu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardswish_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);
void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);

// op_attention.cc
void sdpa_with_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                         const Tensor& input_pos, double scale, Tensor& out);
KernelMemory sdpa_with_cache_memory(const KernelArgs& args);

// op_attention_int8_cache.cc: ember_llm::sdpa_with_int8_cache.out, the int8 KV cache's attention, vectorized.
void sdpa_with_int8_cache_out(KernelContext& ctx, const Tensor& query, const Tensor& key_cache,
                              const Tensor& key_scales, const Tensor& value_cache, const Tensor& value_scales,
                              const Tensor& input_pos, double scale, Tensor& out);
KernelMemory sdpa_with_int8_cache_memory(const KernelArgs& args);

// op_llm_linear_f32.cc: ember_llm::linear.out (weight [N, K] read in place), Float on AVX2+FMA, AVX-512 and NEON.
void linear_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out);

// op_llm_linear.cc: ember_llm::linear_int8.out and ember_llm::linear_8da4w.out, Float on AVX2+FMA and NEON.
void linear_int8_out(KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& scales,
                     const Tensor* bias, Tensor& out);
void linear_8da4w_out(KernelContext& ctx, const Tensor& x, const Tensor& packed_weight, const Tensor& scales,
                      int64_t group_size, const Tensor* bias, Tensor& out);
KernelMemory linear_8da4w_memory(const KernelArgs& args);

}  // namespace optimized
}  // namespace ember
