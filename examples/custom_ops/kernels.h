// The example custom kernel library (see scaled_tanh.py for the operator's definition on the Python side).
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace custom_example {

void scaled_tanh_out(KernelContext& ctx, const Tensor& x, double scale, Tensor& out);

}  // namespace custom_example
}  // namespace ember
