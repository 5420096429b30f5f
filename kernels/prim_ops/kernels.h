// Prim ops: the shape and scalar arithmetic of programs with symbolic shapes (aten::sym_size and
// ExecuTorch's executorch_prim ops). They compute numbers, written into the method's value for the result,
// which the int lists of later kernels read (see BoxedIntList).
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace prim {

void sym_size_int(KernelContext& ctx, const Tensor& self, int64_t dim, EValue& result);
void sym_numel(KernelContext& ctx, const Tensor& self, EValue& result);
void add_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void sub_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void mul_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void floordiv_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void truediv_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void mod_scalar(KernelContext& ctx, int64_t a, int64_t b, EValue& result);
void neg_scalar(KernelContext& ctx, const Scalar& a, EValue& result);
void eq_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void gt_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void lt_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void ge_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
void le_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result);
// self[index] = src along dim 0, growing a bounded self's dim 0 to index + 1 (map and scan stack their results).
void et_copy_index(KernelContext& ctx, Tensor& self, const Tensor& src, int64_t index);

}  // namespace prim
}  // namespace ember
