// The Helium kernel library: Ember's own MVE (M-profile Vector Extension) kernels for Armv8.1-M cores. Signatures
// are those of the kernels they stand in front of (kernels/README.md); registration is generated from kernels.yaml.
#pragma once

#include "kernels/portable/util/spatial_util.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace helium {

// op_linear.cc: ember_quantized::linear.out
KernelMemory linear_memory(const KernelArgs& args);
Error linear_prepare(const KernelArgs& args, void* state);
void linear_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, double output_scale,
                int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_conv2d.cc: ember_quantized::conv2d.out
KernelMemory conv2d_memory(const KernelArgs& args);
Error conv2d_prepare(const KernelArgs& args, void* state);
void conv2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, double output_scale,
                int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_add.cc: ember_quantized::add.out (named apart from aten::add's Float add_out below)
void quantized_add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_mul.cc: ember_quantized::mul.out (named apart from aten::mul's Float mul_out below)
void quantized_mul_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point,
                       const Tensor& other, double other_scale, int64_t other_zero_point, double output_scale,
                       int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_quantize.cc: quantized_decomposed::quantize_per_tensor.out (float32 to int8; other dtypes fall through)
void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out);

// op_pool.cc: ember_quantized::adaptive_avg_pool2d.out (global pooling; other sizes fall through)
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out);
// op_pool.cc: ember_quantized::avg_pool2d.out (windows over 255 taps or strides over 17 fall through)
void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, bool ceil_mode,
                    bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out);
// op_pool.cc: max_pool2d_with_indices.out's int8 calls (op_pool_f32.cc's kernel checks the arguments, then hands
// them here where max_pool_int8_vectorizes: windows of at most 256 taps, column strides up to 17, 32-bit planes).
bool max_pool_int8_vectorizes(const portable::PoolGeometry& g);
void max_pool_int8(const portable::PoolGeometry& g, const int8_t* x, int8_t* out, int64_t* indices);

// op_softmax.cc: ember_quantized::softmax.out along the last dim (other dims fall through, with the same state);
// named apart from _softmax's Float softmax_out below
KernelMemory quantized_softmax_memory(const KernelArgs& args);
Error quantized_softmax_prepare(const KernelArgs& args, void* state);
void quantized_softmax_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                           int64_t dim, double output_scale, int64_t output_zero_point, Tensor& out);

// Float kernels, each registered ahead of portable's and handing it the calls it does not compute (kernels.yaml).
// op_linear_f32.cc
void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out);
void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha, Tensor& out);

// op_conv_f32.cc: aten::convolution.out and ember::convolution_clamp.out; scratch: a patch block or a bordered plane.
KernelMemory convolution_memory(const KernelArgs& args);
KernelMemory convolution_clamp_memory(const KernelArgs& args);
void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out);
void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out);

// op_elementwise_f32.cc
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out);
void hardtanh_out(KernelContext& ctx, const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out);
void clamp_out(KernelContext& ctx, const Tensor& self, Optional<Scalar> min, Optional<Scalar> max, Tensor& out);
void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out);
void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out);

// op_pool_f32.cc
void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices);
void avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    Optional<int64_t> divisor_override, Tensor& out);
void mean_out(KernelContext& ctx, const Tensor& self, Optional<ArrayRef<int64_t>> dim, bool keepdim,
              Optional<int64_t> dtype, Tensor& out);

// op_softmax_f32.cc
void softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float, Tensor& out);

}  // namespace helium
}  // namespace ember
