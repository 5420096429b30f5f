// What Method::execute reports to a profiler, when the runtime is built with the tracer
// (`--define ember_event_tracer=1`, or `--config=profiling`). In the default build Method has no tracer member and
// execute() no hooks: the default runner is byte-for-byte the same binary (tests/size checks the sizes).
#pragma once

#include <stdint.h>

namespace ember {

class EValue;

// Which instruction kind an event timed (the .pte's InstructionArguments numbering), kAllocation, memory a run
// ran in, or kRun, a whole execute().
enum class TraceKind : uint8_t {
  kKernel = 1,
  kDelegate = 2,
  kMove = 3,
  kJumpFalse = 4,
  kFree = 5,
  kAllocation = 6,
  kOutput = 7,  // a kernel's output tensor, copied into the tracer's debug buffer (debug mode)
  kRun = 255,
};

// Operator index of events that time no kernel call.
constexpr uint32_t kNoOperator = 0xFFFFFFFFu;
// Instruction index of a whole-run event (ETDump writes it as instruction_id -1).
constexpr uint32_t kNoInstruction = 0xFFFFFFFFu;

// The allocators an allocation event names: fixed numbers, so a device needs no name table (the ETDump writer
// and devtools/raw_trace.py name them). Planned pool p (1-based, as in the .pte) is kPlannedPool0 + p.
constexpr uint32_t kMethodAllocator = 0;  // the runtime's bookkeeping (MemoryManager::method_allocator)
constexpr uint32_t kTempAllocator = 1;    // the kernels' scratch, one block (MemoryManager::temp_allocator)
constexpr uint32_t kPlannedPool0 = 1;

// The interface a profiler implements. Every call happens inside execute(), so an implementation must not
// allocate, block or fail: it records or drops. Ticks are ember_pal_ticks_ns() (runtime/platform/platform.h).
class EventTracer {
 public:
  // Instruction `instruction` of chain `chain` ran from `start` to `end`. `op_index` indexes the plan's operator
  // table for a kernel call (kNoOperator otherwise). The instruction index is the event's debug handle: the
  // exporter's sidecar (exir/devtools.py) maps it to the FX node, its source line and module path.
  virtual void instruction(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index, uint64_t start,
                           uint64_t end) = 0;
  // One execute() from first to last instruction, whether or not it succeeded.
  virtual void run(uint64_t start, uint64_t end) = 0;
  // The run about to start uses `bytes` from allocator `allocator` (kMethodAllocator...). Ember allocates only at
  // load, so each traced run reports what load took for it, before its first instruction: a trace then says how
  // much memory its runs needed, as ExecuTorch's allocation events do for its allocators.
  virtual void allocation(uint32_t allocator, uint64_t bytes) = 0;
  // Debug mode: kernel instruction `instruction` (operator `op_index`) returned `value` (its last argument: a
  // Tensor, the TensorList of a multi-output kernel, or a prim op's Int), reported after its end tick so copying
  // it is not timed as the kernel. A tracer that keeps no outputs returns at once.
  virtual void output(uint32_t chain, uint32_t instruction, uint32_t op_index, const EValue& value) = 0;

 protected:
  // Not virtual: the runtime never deletes a tracer (that would pull operator delete into the core).
  ~EventTracer() = default;
};

}  // namespace ember
