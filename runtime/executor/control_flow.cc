// Control flow (feature_support.h): jumps checked at load, and the instruction loop that takes them. Linked only
// by tables whose selection has the control_flow feature.
#include "runtime/core/log.h"
#include "runtime/executor/feature_support.h"
#include "runtime/executor/instruction_loop.h"

namespace ember {

namespace {

Error load_jump(const char* method, size_t pc, const ember_pte::JumpFalseCall* jf, const EValue* values,
                Method::Instruction* out, bool* loops) {
  const int32_t dest = jf->destination_instruction();
  // A backward jump is a loop (map, scan, while_loop): the method may then not end by itself, so execute counts
  // instructions against the caller's limit (Method::set_instruction_limit).
  if (dest <= static_cast<int32_t>(pc)) *loops = true;
  const EValue& cond = values[jf->cond_value_index()];
  EMBER_CHECK_OR_RETURN_ERROR(!cond.is_tensor() || cond.as_tensor().scalar_type() == ScalarType::Bool, InvalidProgram,
                              "method '%s' instruction %zu: the jump's predicate (value %d) is a %s "
                              "tensor; it must be Bool",
                              method, pc, static_cast<int>(jf->cond_value_index()),
                              scalar_type_name(cond.as_tensor().scalar_type()));
  out->jump = Method::Instruction::Jump{static_cast<uint32_t>(jf->cond_value_index()), static_cast<uint32_t>(dest)};
  return Error::Ok;
}

}  // namespace

Error ControlFlowSupport::run_with_jumps(Method& method) { return method.run<true>(); }

const ControlFlowSupport kControlFlowSupport = {&load_jump, &ControlFlowSupport::run_with_jumps};

}  // namespace ember
