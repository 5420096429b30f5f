#include "runtime/executor/method_meta.h"

#include "exir/schema/program_generated.h"
#include "runtime/core/log.h"
#include "runtime/executor/method.h"

namespace ember {

Result<MethodMeta> MethodMeta::make(const ember_pte::ExecutionPlan* plan) {
  EMBER_TRY_ASSIGN(bytes, Method::bookkeeping_bytes(plan));
  return MethodMeta(plan, bytes);
}

const char* MethodMeta::name() const { return plan_->name() ? plan_->name()->c_str() : "?"; }
size_t MethodMeta::num_inputs() const { return plan_->inputs() ? plan_->inputs()->size() : 0; }
size_t MethodMeta::num_outputs() const { return plan_->outputs() ? plan_->outputs()->size() : 0; }

size_t MethodMeta::num_memory_planned_buffers() const {
  const auto* s = plan_->non_const_buffer_sizes();
  return s && s->size() > 1 ? s->size() - 1 : 0;
}

Result<size_t> MethodMeta::memory_planned_buffer_size(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_memory_planned_buffers(), InvalidArgument,
                              "method '%s' has %zu planned buffers; asked for %zu", name(),
                              num_memory_planned_buffers(), index);
  const int64_t size = plan_->non_const_buffer_sizes()->Get(static_cast<flatbuffers::uoffset_t>(index + 1));
  EMBER_CHECK_OR_RETURN_ERROR(size >= 0, InvalidProgram, "planned buffer %zu has negative size %lld", index,
                              static_cast<long long>(size));
  return static_cast<size_t>(size);
}

size_t MethodMeta::num_instructions() const {
  const auto* chains = plan_->chains();
  if (chains == nullptr || chains->size() == 0 || chains->Get(0)->instructions() == nullptr) return 0;
  return chains->Get(0)->instructions()->size();
}

Result<TensorInfo> MethodMeta::tensor_meta(int32_t value_index, const char* what, size_t index) const {
  const auto* values = plan_->values();
  EMBER_CHECK_OR_RETURN_ERROR(values != nullptr && value_index >= 0 &&
                                  static_cast<size_t>(value_index) < values->size(),
                              InvalidProgram, "%s %zu refers to value %d, out of range", what, index,
                              static_cast<int>(value_index));
  const auto* v = values->Get(static_cast<flatbuffers::uoffset_t>(value_index));
  EMBER_CHECK_OR_RETURN_ERROR(v->val_type() == ember_pte::KernelTypes::Tensor, NotSupported,
                              "%s %zu is not a tensor", what, index);
  const auto* t = v->val_as_Tensor();
  const size_t dim = t->sizes() ? t->sizes()->size() : 0;
  TensorInfo info;
  info.scalar_type = static_cast<ScalarType>(t->scalar_type());
  info.sizes = ArrayRef<int32_t>(dim ? t->sizes()->data() : nullptr, dim);
  info.dim_order = ArrayRef<uint8_t>(t->dim_order() ? t->dim_order()->data() : nullptr,
                                     t->dim_order() ? t->dim_order()->size() : 0);
  EMBER_TRY_ASSIGN(nbytes, checked_nbytes(info.scalar_type, info.sizes));
  info.nbytes = nbytes;
  info.is_planned = t->allocation_info() != nullptr;
  return info;
}

Result<TensorInfo> MethodMeta::input_tensor_meta(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_inputs(), InvalidArgument, "method '%s' has %zu inputs; asked for %zu",
                              name(), num_inputs(), index);
  return tensor_meta(plan_->inputs()->Get(static_cast<flatbuffers::uoffset_t>(index)), "input", index);
}

Result<TensorInfo> MethodMeta::output_tensor_meta(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_outputs(), InvalidArgument, "method '%s' has %zu outputs; asked for %zu",
                              name(), num_outputs(), index);
  return tensor_meta(plan_->outputs()->Get(static_cast<flatbuffers::uoffset_t>(index)), "output", index);
}

}  // namespace ember
