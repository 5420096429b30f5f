// A loaded method: its values resolved to EValues over planned or constant memory, its instructions resolved
// to kernel function pointers with their argument lists, all once, at load. execute() is then a loop over
// pre-resolved calls: no lookups, no allocation, no exceptions.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/kernel/operator_registry.h"

namespace ember_pte {
struct ExecutionPlan;
}

namespace ember {

class Program;

class Method {
 public:
  static Result<Method> load(const Program* program, const ember_pte::ExecutionPlan* plan, MemoryManager* memory);

  // Bytes load() takes from a 16-byte-aligned method allocator for `plan` (see MethodMeta), or an error for a
  // malformed plan.
  static Result<size_t> bookkeeping_bytes(const ember_pte::ExecutionPlan* plan);

  const char* name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t num_instructions() const { return num_instructions_; }

  // Copies `data` into input `index` after checking its type, shape and byte count against the program's.
  Error set_input(size_t index, ScalarType type, ArrayRef<int32_t> sizes, const void* data, size_t nbytes);
  Result<Tensor> input(size_t index) const;
  Result<Tensor> output(size_t index) const;

  // Runs every instruction. On a kernel failure, stops and returns the kernel's error, after logging the
  // instruction index and operator.
  Error execute();

  struct Instruction {
    KernelFn fn;         // KernelCall; null for the other kinds
    EValue** args;
    uint32_t num_args;
    uint8_t kind;        // ember_pte::InstructionArguments
    uint32_t a;          // MoveCall from / JumpFalse cond / Free value / KernelCall op index
    uint32_t b;          // MoveCall to / JumpFalse destination
  };

 private:
  Method() = default;

  const Program* program_ = nullptr;
  const ember_pte::ExecutionPlan* plan_ = nullptr;
  MemoryManager* memory_ = nullptr;
  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  Instruction* instructions_ = nullptr;
  size_t num_instructions_ = 0;
};

}  // namespace ember
