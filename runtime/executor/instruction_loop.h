// Method's instruction loop, one definition for both of its forms: method.cc instantiates run<false> (kernel calls,
// moves and frees), control_flow.cc run<true> (jumps too, and the instruction limit), so a build without control
// flow carries neither the jump case nor the step count. Internal to runtime/executor.
#pragma once

#include "runtime/core/log.h"
#include "runtime/executor/execute_trace.h"
#include "runtime/executor/method.h"
#include "schema/program_generated.h"

namespace ember {

// The operator an instruction calls, for messages ("delegate" for a delegate call). Defined in method.cc.
const char* instruction_op_name(const ember_pte::ExecutionPlan* plan, uint32_t op_index, const char** overload);

template <bool kJumps>
Error Method::run() {
  using ember_pte::InstructionArguments;
  size_t pc = 0;
  [[maybe_unused]] uint64_t steps = 0;
  while (pc < num_instructions_) {
    EMBER_TRACE_INSTRUCTION_BEGIN(pc)
    if constexpr (kJumps) {
      // Only a method with a backward jump can run for ever; a straight one ends after num_instructions_ steps.
      if (loops_ && instruction_limit_ != 0 && ++steps > instruction_limit_) {
        EMBER_LOG(ERROR,
                  "method '%s': stopped at instruction %zu after %llu instructions (set_instruction_limit; "
                  "a loop that does not end?)",
                  name(), pc, static_cast<unsigned long long>(instruction_limit_));
        return Error::OutOfResources;
      }
    }
    const Instruction& ins = instructions_[pc];
    switch (static_cast<InstructionArguments>(ins.kind)) {
      case InstructionArguments::KernelCall: {
        KernelContext ctx(ins.kernel.state, scratch_, threads_);
        ins.kernel.fn(ctx, ins.kernel.args);
        if (ctx.failure() != Error::Ok) {
          const char* overload;
          const char* op = instruction_op_name(plan_, ins.kernel.op_index, &overload);
          EMBER_LOG(ERROR, "method '%s' instruction %zu (%s%s%s) failed: %s", name(), pc, op, overload[0] ? "." : "",
                    overload, error_name(ctx.failure()));
          return ctx.failure();
        }
        ++pc;
        break;
      }
      case InstructionArguments::MoveCall:
        values_[ins.move.to] = values_[ins.move.from];
        ++pc;
        break;
      case InstructionArguments::JumpFalseCall:
        if constexpr (kJumps) {
          const EValue& cond = values_[ins.jump.cond];
          bool taken = false;
          if (cond.is_tensor()) {
            // torch.cond's predicate: one Bool element (its dtype was checked at load).
            const Tensor& t = cond.as_tensor();
            EMBER_CHECK_OR_RETURN_ERROR(t.numel() == 1, InvalidArgument,
                                        "method '%s' instruction %zu: the predicate (value %u) has %lld elements; a "
                                        "branch needs exactly one",
                                        name(), pc, static_cast<unsigned>(ins.jump.cond),
                                        static_cast<long long>(t.numel()));
            taken = !t.const_data_ptr<Bool8>()[0];
          } else {
            taken = !cond.as_bool();
          }
          pc = taken ? ins.jump.destination : pc + 1;
          break;
        } else {
          return Error::InvalidProgram;  // unreachable: a method with jumps runs run<true>
        }
      case InstructionArguments::FreeCall:
        // Every tensor's bytes are planned, and the plan already reuses them after a tensor's last use; there is
        // nothing to free. (Dropping the pointer, as this once did, let a later kernel read a null one.)
        ++pc;
        break;
      default: return Error::InvalidProgram;  // unreachable: load() accepted only the kinds above
    }
    EMBER_TRACE_INSTRUCTION_END()
  }
  return Error::Ok;
}

}  // namespace ember
