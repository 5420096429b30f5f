#include "runtime/executor/method_meta.h"

#include "runtime/core/log.h"
#include "runtime/executor/method.h"
#include "runtime/executor/plan_access.h"

namespace ember {

Result<MethodMeta> MethodMeta::make(const ember_pte::ExecutionPlan* plan) {
  size_t scratch = 0;
  EMBER_TRY_ASSIGN(bytes, Method::bookkeeping_bytes(plan, &scratch));
  return MethodMeta(plan, bytes, scratch);
}

// Asked of the kernels' memory functions each time rather than kept: threaded callers ask once, before load.
size_t MethodMeta::scratch_bytes(int threads) const { return Method::scratch_bytes(plan_, threads); }

// The plan's structure was verified when its program loaded (program_verifier.h).
const char* MethodMeta::name() const { return plan_->name()->c_str(); }
size_t MethodMeta::num_inputs() const { return pte::count(plan_->inputs()); }
size_t MethodMeta::num_outputs() const { return pte::count(plan_->outputs()); }
size_t MethodMeta::num_memory_planned_buffers() const { return pte::num_pools(plan_); }

Result<size_t> MethodMeta::memory_planned_buffer_size(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_memory_planned_buffers(), InvalidArgument,
                              "method '%s' has %zu planned buffers; asked for %zu", name(),
                              num_memory_planned_buffers(), index);
  // Non-negative and addressable: checked by the verifier.
  return static_cast<size_t>(pte::at(plan_->non_const_buffer_sizes(), index + 1));
}

size_t MethodMeta::num_instructions() const { return pte::count(pte::instructions(plan_)); }

size_t MethodMeta::num_mutable_buffers() const {
  size_t n = 0;
  for (size_t i = 0; i < pte::count(plan_->values()); ++i) {
    const ember_pte::Tensor* t = pte::at(plan_->values(), i)->val_as_Tensor();
    // As Method::load reads it: planned, with initial bytes from the mutable data segments.
    n += t != nullptr && t->allocation_info() != nullptr && t->data_buffer_idx() > 0;
  }
  return n;
}

TensorInfo MethodMeta::tensor_meta(int32_t value_index) const {
  // An input or output is a valid tensor value: checked by the verifier.
  const ember_pte::Tensor* t = pte::at(plan_->values(), static_cast<size_t>(value_index))->val_as_Tensor();
  TensorInfo info;
  info.scalar_type = static_cast<ScalarType>(t->scalar_type());
  info.sizes = pte::tensor_sizes(t);
  info.dim_order = ArrayRef<uint8_t>(t->dim_order() ? t->dim_order()->data() : nullptr, pte::count(t->dim_order()));
  info.nbytes = checked_nbytes(info.scalar_type, info.sizes).get();
  info.is_planned = t->allocation_info() != nullptr;
  info.is_dynamic = static_cast<uint8_t>(t->shape_dynamism()) != 0;
  return info;
}

Result<TensorInfo> MethodMeta::input_tensor_meta(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_inputs(), InvalidArgument, "method '%s' has %zu inputs; asked for %zu",
                              name(), num_inputs(), index);
  return tensor_meta(pte::at(plan_->inputs(), index));
}

Result<Tag> MethodMeta::output_tag(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_outputs(), InvalidArgument, "method '%s' has %zu outputs; asked for %zu",
                              name(), num_outputs(), index);
  // The verifier allowed these four kinds only.
  switch (pte::at(plan_->values(), static_cast<size_t>(pte::at(plan_->outputs(), index)))->val_type()) {
    case ember_pte::KernelTypes::Int: return Tag::Int;
    case ember_pte::KernelTypes::Double: return Tag::Double;
    case ember_pte::KernelTypes::Bool: return Tag::Bool;
    default: return Tag::Tensor;
  }
}

Result<TensorInfo> MethodMeta::output_tensor_meta(size_t index) const {
  EMBER_TRY_ASSIGN(tag, output_tag(index));
  EMBER_CHECK_OR_RETURN_ERROR(tag == Tag::Tensor, InvalidType, "method '%s': output %zu is %s, not a tensor", name(),
                              index, tag_name(tag));
  return tensor_meta(pte::at(plan_->outputs(), index));
}

}  // namespace ember
