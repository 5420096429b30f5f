#include "runtime/executor/constant_use.h"

#include <string.h>

#include "runtime/core/scalar_type.h"
#include "runtime/executor/plan_access.h"

namespace ember {

namespace {

namespace fb = ember_pte;
using pte::at;
using pte::count;

// The operators that read rows of their first argument by index: aten's embedding and Ember's quantized
// embeddings (whose first argument is the int8 or packed int4 table).
constexpr const char* kRowGathers[] = {"aten::embedding", "ember_llm::embedding_int8", "ember_llm::embedding_4bit"};

struct Visitor {
  const Program& program;
  const fb::ExecutionPlan* plan;
  void (*visit)(const void*, size_t, void*);
  void* context;
  const ExternalData* data;
};

// Value `index` when it is a constant tensor (constant data, not planned), with its bytes; nothing otherwise.
void visit_if_constant(const Visitor& v, int32_t index) {
  const fb::EValue* value = at(v.plan->values(), static_cast<size_t>(index));
  if (value->val_type() != fb::KernelTypes::Tensor) return;
  const fb::Tensor* t = value->val_as_Tensor();
  if (t->allocation_info() != nullptr) return;
  size_t nbytes = element_size(static_cast<ScalarType>(t->scalar_type()));
  for (int32_t size : pte::tensor_sizes(t)) nbytes *= static_cast<size_t>(size);
  // External constants live in a data file, found by name as load finds them; the file checks type and size.
  if (pte::is_external(t)) {
    const auto* fqn = t->extra_tensor_info()->fully_qualified_name();
    if (v.data == nullptr || fqn == nullptr || nbytes == 0) return;
    Result<const void*> data =
        v.data->tensor(fqn->c_str(), static_cast<ScalarType>(t->scalar_type()), pte::tensor_sizes(t), nbytes);
    if (data.ok()) v.visit(data.get(), nbytes, v.context);
    return;
  }
  if (t->data_buffer_idx() == 0) return;
  // The verifier proved the range lies in the constant segment; a refusal here means a program loaded without
  // verification, and reading nothing is the safe answer for a hint.
  Result<const void*> data = v.program.constant_data(t->data_buffer_idx(), nbytes);
  if (data.ok() && nbytes > 0) v.visit(data.get(), nbytes, v.context);
}

// An argument: a tensor, or each tensor of a list (a concatenation of constants reads all of them).
void visit_argument(const Visitor& v, int32_t index) {
  const fb::EValue* value = at(v.plan->values(), static_cast<size_t>(index));
  const flatbuffers::Vector<int32_t>* items = nullptr;
  if (value->val_type() == fb::KernelTypes::TensorList) items = value->val_as_TensorList()->items();
  if (value->val_type() == fb::KernelTypes::OptionalTensorList) items = value->val_as_OptionalTensorList()->items();
  if (items == nullptr) return visit_if_constant(v, index);
  for (size_t i = 0; i < count(items); ++i) {
    if (at(items, i) >= 0) visit_if_constant(v, at(items, i));  // -1: an absent optional tensor
  }
}

bool gathers_rows(const fb::ExecutionPlan* plan, int32_t op_index) {
  return gathers_rows_of_first_argument(pte::str(at(plan->operators(), static_cast<size_t>(op_index))->name()));
}

}  // namespace

bool gathers_rows_of_first_argument(const char* name) {
  for (const char* gather : kRowGathers) {
    if (strcmp(name, gather) == 0) return true;
  }
  return false;
}

Error for_each_constant_read_whole(const Program& program, const char* method_name,
                                   void (*visit)(const void* data, size_t nbytes, void* context), void* context,
                                   const ExternalData* data) {
  EMBER_TRY_ASSIGN(plan, program.find_plan(method_name));
  const Visitor v{program, plan, visit, context, data};
  const auto* instrs = pte::instructions(plan);
  for (size_t pc = 0; pc < count(instrs); ++pc) {
    const fb::Instruction* ins = at(instrs, pc);
    const flatbuffers::Vector<int32_t>* args = nullptr;
    size_t first = 0;
    if (ins->instr_args_type() == fb::InstructionArguments::KernelCall) {
      const fb::KernelCall* call = ins->instr_args_as_KernelCall();
      args = call->args();
      first = gathers_rows(plan, call->op_index()) ? 1 : 0;  // the gathered table is left to its rows' faults
    } else if (ins->instr_args_type() == fb::InstructionArguments::DelegateCall) {
      args = ins->instr_args_as_DelegateCall()->args();
    }
    for (size_t k = first; k < count(args); ++k) visit_argument(v, at(args, k));
  }
  return Error::Ok;
}

}  // namespace ember
