// The portable kernel library: reference C++ for core ATen out-variant ops, one family per op_*.cc file.
// Signatures follow kernels/README.md; registration is generated from kernels.yaml.
#pragma once

#include "runtime/core/evalue.h"
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
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                     bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);
// ember::convolution_clamp.out: the same, then out clamped to [min, max] (Float only).
void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out);

// op_pool.cc
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

// op_norm.cc
void native_layer_norm_out(KernelContext& ctx, const Tensor& input, ArrayRef<int64_t> normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0, Tensor& out1,
                           Tensor& out2);
void native_batch_norm_legit_no_training_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                                             const Tensor* bias, const Tensor& running_mean,
                                             const Tensor& running_var, double momentum, double eps, Tensor& out0,
                                             Tensor& out1, Tensor& out2);

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
void slice_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Optional<int64_t> start,
                    Optional<int64_t> end, int64_t step, Tensor& out);
void select_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t index, Tensor& out);
void full_out(KernelContext& ctx, ArrayRef<int64_t> size, const Scalar& fill_value, Tensor& out);

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
