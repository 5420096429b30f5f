// A loaded method: its values resolved to EValues over planned or constant memory, its instructions resolved
// to kernel function pointers with their argument lists, all once, at load. execute() is then a loop over
// pre-resolved calls: no lookups, no allocation, no exceptions.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/core/external_data.h"
#include "runtime/core/result.h"
#include "runtime/core/thread_pool.h"
#include "runtime/executor/execute_trace.h"
#include "runtime/executor/memory_manager.h"
#if EMBER_EVENT_TRACER
#include "runtime/devtools/event_tracer.h"
#endif
#include "runtime/kernel/operator_registry.h"

namespace ember_pte {
struct ExecutionPlan;
}

namespace ember {

class Program;
struct ControlFlowSupport;
struct DelegateState;

class Method {
 public:
  // `plan` must come from a Program (whose load verified its structure: see program_verifier.h). `data` holds the
  // tensors the program keeps outside itself (.ptd files, runtime/core/external_data.h); null when it has none.
  static Result<Method> load(const Program* program, const ember_pte::ExecutionPlan* plan, MemoryManager* memory,
                             const ExternalData* data = nullptr);

  // Bytes load() takes from a 16-byte-aligned method allocator for `plan` (see MethodMeta): load's own
  // allocation step run over a counting allocator, so the prediction cannot drift from what load does. Also
  // writes scratch_bytes(plan, 1) to `scratch` (the same pass over the program).
  static Result<size_t> bookkeeping_bytes(const ember_pte::ExecutionPlan* plan, size_t* scratch);

  // Bytes of kernel scratch load() takes from the temp allocator (16-byte aligned) for a method loaded for
  // `threads` threads (MemoryManager::threads): the most any one instruction's kernel asks for
  // (runtime/kernel/kernel_args.h). 0 when no kernel needs scratch.
  static size_t scratch_bytes(const ember_pte::ExecutionPlan* plan, int threads);

#ifdef EMBER_DELEGATES
  // Runs each delegate's backend destroy (runtime/backend/backend.h); nothing else to release: the rest of the
  // method lives in the caller's allocators.
  ~Method();
  Method(Method&& other);
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
#endif

  const char* name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t num_instructions() const { return num_instructions_; }

  // Copies `data` into input `index` after checking its type, shape and byte count against the program's.
  // A bounded dynamic input takes any shape of its rank within its planned sizes (MethodMeta's).
  Error set_input(size_t index, ScalarType type, ArrayRef<int32_t> sizes, const void* data, size_t nbytes);
  // Gives input `index` the shape `sizes` (checked as set_input checks it) without copying data, for callers that
  // then write the input's bytes in place (a board reading a file straight into the planned buffer).
  Error resize_input(size_t index, ArrayRef<int32_t> sizes);
  Result<Tensor> input(size_t index) const;
  // Output `index` as a tensor; InvalidType when it is a scalar (see output_value).
  Result<Tensor> output(size_t index) const;
  // Output `index` as it is: a Tensor, or an Int, Double or Bool (a constant method's value, a computed size).
  Result<EValue> output_value(size_t index) const;

  // Runs every instruction. On a kernel failure, stops and returns the kernel's error, after logging the
  // instruction index and operator.
  Error execute();

  // Whether the program jumps backward (a map, scan or while_loop): only then can execute() run for ever.
  bool has_loops() const { return loops_; }
  // At most `n` instructions per execute() in a method with loops (0, the default: no limit). Past it, execute
  // returns OutOfResources, naming the instruction: a device's bound on a loop that would not end.
  void set_instruction_limit(uint64_t n) { instruction_limit_ = n; }
  // Kernels split their work across `pool`'s threads from the next execute() on (null: the calling thread alone,
  // the default). The pool is the caller's and must outlive the method's executes. Kernels that give each thread
  // its own scratch use as many threads as the method was loaded for (MemoryManager::threads); the rest use all.
  void set_thread_pool(ThreadPool* pool) { threads_ = pool; }
  ThreadPool* thread_pool() const { return threads_; }

  // Points every planned tensor of pool `memory_id` (1 for the first, as MethodMeta counts them) at the same offsets
  // of `buffer` instead of the bytes load() placed it in: a caller that keeps several states of one method (an
  // LLM's sessions, each with its KV cache in a pool of its own) switches between them by pointer, without a copy.
  // `buffer` is used as it is (load_initial_values resets it) and must outlive its use; 16-byte aligned and at least
  // the pool's planned bytes (InvalidArgument otherwise, naming both). NotSupported, before anything changes, when
  // something resolved at load could keep a pointer into the pool: a kernel with prepared state that takes one of
  // the pool's tensors, or a delegate.
  Error bind_pool(uint32_t memory_id, Span<uint8_t> buffer);
  // Writes the program's initial values into the mutable buffers of pool `memory_id`, wherever it is now bound:
  // the state a freshly loaded method starts from.
  Error load_initial_values(uint32_t memory_id);
  // The mutable buffers of pool `memory_id` (planned tensors loaded with an initial value: an LLM's KV cache), in
  // value order, each with its byte offset in the pool: writes up to `cap` to `out`, returns how many there are.
  struct PoolBuffer {
    uint64_t offset;
    const TensorImpl* tensor;
  };
  size_t pool_buffers(uint32_t memory_id, PoolBuffer* out, size_t cap) const;

#if EMBER_EVENT_TRACER
  // Profiling builds only (runtime/devtools/event_tracer.h): every later execute() reports the memory it runs in
  // (allocation events), then each instruction's start and end ticks, and its own, to `tracer` (null stops it).
  // The tracer must outlive the runs.
  void set_event_tracer(EventTracer* tracer);
  // The name and overload ("" if none) of operator `op_index` of this method, for naming a trace's events; null
  // when out of range.
  const char* operator_name(uint32_t op_index, const char** overload) const;
  size_t num_operators() const;
#endif

  // One resolved instruction; `kind` (an ember_pte::InstructionArguments) says which member is live.
  struct Instruction {
    struct Kernel {
      KernelFn fn;
      EValue** args;
      void* state;  // what the kernel's prepare step filled; null if none
      uint32_t num_args;
      uint32_t op_index;  // into the plan's operator table, to name the operator in errors
    };
    struct Move {
      uint32_t from, to;
    };
    struct Jump {
      uint32_t cond, destination;  // to `destination` when value `cond` is false
    };
    struct Free {
      uint32_t value;
    };
    uint8_t kind;
    union {
      Kernel kernel;
      Move move;
      Jump jump;
      Free free;
    };
  };

 private:
  friend class MethodLoader;
  friend struct ControlFlowSupport;  // runs run<true> (control_flow.cc)
  Method() = default;
  // The instruction loop (instruction_loop.h): run<false> for straight methods, run<true>, with the jump case and
  // the instruction limit, for methods with jumps; only a build with control flow links the second.
  template <bool kJumps>
  Error run();
#if EMBER_EVENT_TRACER
  Error execute_steps();
  void trace_instruction(size_t pc, uint64_t start);
  void trace_memory(EventTracer* tracer) const;
#endif

  const Program* program_ = nullptr;
  const ember_pte::ExecutionPlan* plan_ = nullptr;
  MemoryManager* memory_ = nullptr;
  EValue* values_ = nullptr;
  TensorImpl* tensors_ = nullptr;  // every Tensor value's description, in value order (bind_pool re-points them)
  size_t num_values_ = 0;
  Instruction* instructions_ = nullptr;
  size_t num_instructions_ = 0;
  bool loops_ = false;
  const ControlFlowSupport* flow_ = nullptr;  // set when the method jumps
  uint64_t instruction_limit_ = 0;
  ThreadPool* threads_ = nullptr;
  Span<uint8_t> scratch_;  // every kernel's scratch (one call at a time)
#if EMBER_EVENT_TRACER
  EventTracer* tracer_ = nullptr;
  size_t traced_bookkeeping_ = 0;  // this method's bytes of the method allocator, counted when a tracer is set
#endif
#ifdef EMBER_DELEGATES
  DelegateState* delegates_ = nullptr;  // null without delegate calls (runtime/executor/delegate_support.h)
#endif
};

}  // namespace ember
