// The quantized kernel library: int8 kernels with int32 accumulation and fixed-point requantization
// (util/requantize.h), plus the quantize/dequantize ops that enter and leave the int8 domain. One family per
// op_*.cc file; signatures follow kernels/README.md; registration is generated from kernels.yaml.
//
// Conventions of the ember_quantized ops (the contract with exir's quantization lowering): activations are
// per-tensor asymmetric int8; weights are symmetric int8 per output channel (zero point 0); bias is int32 with
// scale input_scale * weight_scale[oc] and zero point 0; conv and pooling tensors are contiguous NCHW; results
// are clamped to [activation_min, activation_max], which is how a fused relu or relu6 arrives.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace quantized {

// op_quantize.cc (quantized_decomposed::*, PyTorch's schemas plus out=)
void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out);
void dequantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale, int64_t zero_point,
                               int64_t quant_min, int64_t quant_max, int64_t dtype, Optional<int64_t> out_dtype,
                               Tensor& out);
void quantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales, const Tensor& zero_points,
                              int64_t axis, int64_t quant_min, int64_t quant_max, int64_t dtype, Tensor& out);
void dequantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t quant_min, int64_t quant_max,
                                int64_t dtype, Optional<int64_t> out_dtype, Tensor& out);

// op_conv2d.cc
void conv2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, double output_scale,
                int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_linear.cc
// Prepare steps (kernels/README.md): conv2d's and linear's constants become per-channel state at load.
KernelMemory conv2d_memory(const KernelArgs& args);
Error conv2d_prepare(const KernelArgs& args, void* state);
KernelMemory linear_memory(const KernelArgs& args);
Error linear_prepare(const KernelArgs& args, void* state);

void linear_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                const Tensor& weight, const Tensor& weight_scales, const Tensor* bias, double output_scale,
                int64_t output_zero_point, int64_t activation_min, int64_t activation_max, Tensor& out);

// op_add.cc
void add_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
             double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
             int64_t activation_min, int64_t activation_max, Tensor& out);

// op_mul.cc
void mul_out(KernelContext& ctx, const Tensor& self, double self_scale, int64_t self_zero_point, const Tensor& other,
             double other_scale, int64_t other_zero_point, double output_scale, int64_t output_zero_point,
             int64_t activation_min, int64_t activation_max, Tensor& out);

// op_pool.cc
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out);
void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, bool ceil_mode,
                    bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out);

// op_softmax.cc (prepare step: the exponential table, util/softmax_table.h)
KernelMemory softmax_memory(const KernelArgs& args);
Error softmax_prepare(const KernelArgs& args, void* state);
void softmax_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point, int64_t dim,
                 double output_scale, int64_t output_zero_point, Tensor& out);

}  // namespace quantized
}  // namespace ember
