#include "runtime/executor/program_args.h"

#include <string.h>

#include "runtime/executor/plan_access.h"
#include "runtime/executor/prepare_support.h"
#include "schema/argument_codes.h"

namespace ember {

namespace fb = ember_pte;
using fb::KernelTypes;

// Every accessor answers 0 (or empty) for a value of another kind: the caller checks kinds against the kernel's
// signature first, and a malformed program must still not crash the prediction.
const fb::EValue* ProgramKernelArgs::value(size_t i) const {
  return pte::at(values_, static_cast<size_t>(pte::at(args_, i)));
}

Tag ProgramKernelArgs::tag(size_t i) const {
  switch (value(i)->val_type()) {
    case KernelTypes::Int: return Tag::Int;
    case KernelTypes::Double: return Tag::Double;
    case KernelTypes::Bool: return Tag::Bool;
    case KernelTypes::Tensor: return Tag::Tensor;
    case KernelTypes::String: return Tag::String;
    case KernelTypes::IntList: return Tag::IntList;
    case KernelTypes::DoubleList: return Tag::DoubleList;
    case KernelTypes::BoolList: return Tag::BoolList;
    case KernelTypes::TensorList: return Tag::TensorList;
    case KernelTypes::OptionalTensorList: return Tag::OptionalTensorList;
    default: return Tag::None;
  }
}

ScalarType ProgramKernelArgs::dtype(size_t i) const {
  const fb::Tensor* t = value(i)->val_as_Tensor();
  // kNumScalarTypes: no type (the value is not a tensor).
  return static_cast<ScalarType>(t != nullptr ? static_cast<int>(t->scalar_type()) : kNumScalarTypes);
}

ArrayRef<int32_t> ProgramKernelArgs::sizes(size_t i) const {
  const fb::Tensor* t = value(i)->val_as_Tensor();
  return t != nullptr ? pte::tensor_sizes(t) : ArrayRef<int32_t>();
}

int64_t ProgramKernelArgs::to_int(size_t i) const {
  const fb::Int* v = value(i)->val_as_Int();
  return v != nullptr ? v->int_val() : 0;
}

double ProgramKernelArgs::to_double(size_t i) const {
  const fb::EValue* v = value(i);
  if (const fb::Double* d = v->val_as_Double()) return d->double_val();
  if (const fb::Int* n = v->val_as_Int()) return static_cast<double>(n->int_val());
  return 0.0;
}

bool ProgramKernelArgs::to_bool(size_t i) const {
  const fb::Bool* v = value(i)->val_as_Bool();
  return v != nullptr && v->bool_val();
}

size_t ProgramKernelArgs::list_size(size_t i) const {
  const fb::IntList* l = value(i)->val_as_IntList();
  return l != nullptr ? pte::count(l->items()) : 0;
}

int64_t ProgramKernelArgs::list_item(size_t i, size_t k) const {
  // The verifier proved every item names an Int value.
  const fb::IntList* l = value(i)->val_as_IntList();
  if (l == nullptr || k >= pte::count(l->items())) return 0;
  return pte::at(values_, static_cast<size_t>(pte::at(l->items(), k)))->val_as_Int()->int_val();
}

bool ProgramKernelArgs::is_constant(size_t i) const {
  // Constant data: a buffer index and no planned allocation (a planned tensor with a buffer index is a mutable
  // buffer's initial value, which execute may overwrite).
  const fb::Tensor* t = value(i)->val_as_Tensor();
  // External constants (in a .ptd) are read-only data too.
  return t != nullptr && t->allocation_info() == nullptr && (t->data_buffer_idx() > 0 || pte::is_external(t));
}

namespace {

// A kernel's KernelMemory for `call`, unrounded; zero as program_memory says.
KernelMemory declared_memory(const fb::ExecutionPlan* plan, const fb::KernelCall* call) {
  const fb::Operator* op = pte::at(plan->operators(), static_cast<size_t>(call->op_index()));
  const KernelEntry* entry = find_kernel(op->name()->c_str(), pte::str(op->overload()));
  if (entry == nullptr || entry->memory == nullptr) return {};
  ProgramKernelArgs args(plan, call);
  if (args.size() != strlen(entry->arg_types)) return {};
  for (size_t k = 0; k < args.size(); ++k) {
    if (!argument_code_accepts(entry->arg_types[k], args.tag(k))) return {};
  }
  return entry->memory(args);
}

PlannedMemory program_memory(const fb::ExecutionPlan* plan, const fb::KernelCall* call) {
  const KernelMemory m = declared_memory(plan, call);
  return {round16(m.state), round16(m.scratch)};
}

size_t threaded_scratch(const fb::ExecutionPlan* plan, int threads) {
  size_t most = 0;
  const auto* instrs = pte::instructions(plan);
  for (size_t pc = 0; pc < pte::count(instrs); ++pc) {
    const fb::Instruction* ins = pte::at(instrs, pc);
    if (ins->instr_args_type() != fb::InstructionArguments::KernelCall) continue;
    const KernelMemory m = declared_memory(plan, ins->instr_args_as_KernelCall());
    size_t scratch = round16(m.scratch);
    const size_t per_thread = round16(m.scratch_per_thread);
    for (int t = 1; t < threads; ++t) scratch = scratch <= SIZE_MAX - per_thread ? scratch + per_thread : SIZE_MAX;
    most = scratch > most ? scratch : most;
  }
  return most;
}

Error loaded_prepare(const fb::ExecutionPlan* plan, const fb::KernelCall* call, const KernelEntry* entry, EValue** args,
                     size_t num_args, bool values_fixed, void* state) {
  if (entry->prepare == nullptr) return Error::Ok;
  const ProgramKernelArgs in_program(plan, call);
  uint64_t constants = 0;
  for (size_t k = 0; k < num_args && k < 64; ++k) constants |= uint64_t{in_program.is_constant(k)} << k;
  const LoadedKernelArgs loaded(args, num_args, constants, values_fixed);
  return entry->prepare(loaded, state);
}

}  // namespace

extern const PrepareSupport kPrepareSupport = {program_memory, threaded_scratch, loaded_prepare};

}  // namespace ember
