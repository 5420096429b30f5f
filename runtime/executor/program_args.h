// An instruction's arguments read straight from a verified program, as KernelArgs (runtime/kernel/kernel_args.h):
// how MethodMeta and Method::load ask a kernel for its memory before any value is loaded. Internal to
// runtime/executor.
#pragma once

#include "runtime/executor/plan_access.h"
#include "runtime/kernel/kernel_args.h"

namespace ember {

class ProgramKernelArgs final : public KernelArgs {
 public:
  ProgramKernelArgs(const ember_pte::ExecutionPlan* plan, const ember_pte::KernelCall* call)
      : values_(plan->values()), args_(call->args()) {}

  size_t size() const override { return pte::count(args_); }
  Tag tag(size_t i) const override;
  ScalarType dtype(size_t i) const override;
  ArrayRef<int32_t> sizes(size_t i) const override;
  int64_t to_int(size_t i) const override;
  double to_double(size_t i) const override;
  bool to_bool(size_t i) const override;
  size_t list_size(size_t i) const override;
  int64_t list_item(size_t i, size_t k) const override;
  const Tensor* tensor(size_t) const override { return nullptr; }
  bool is_constant(size_t i) const override;
  // Memory functions size from shapes alone and never ask; a prepare step sees LoadedKernelArgs.
  bool shapes_fixed() const override { return false; }

 private:
  const ember_pte::EValue* value(size_t i) const;

  const flatbuffers::Vector<flatbuffers::Offset<ember_pte::EValue>>* values_;
  const flatbuffers::Vector<int32_t>* args_;
};

}  // namespace ember
