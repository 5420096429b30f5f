// What a method needs, known before it is loaded: its inputs and outputs, the bytes of each planned pool, and
// the exact bytes of the runtime's own bookkeeping, so a caller (a microcontroller's startup code included) can
// size every buffer up front. ExecuTorch users have no way to learn the last number (its issues #9491, #16244).
#pragma once

#include <stddef.h>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember_pte {
struct ExecutionPlan;
}

namespace ember {

class MethodMeta;
class Program;
// MethodMeta with the delegates' share of the method allocator (delegate_support.cc).
Result<MethodMeta> delegates_method_meta(const Program* program, const ember_pte::ExecutionPlan* plan);

struct TensorInfo {
  ScalarType scalar_type;
  // For a bounded dynamic tensor (is_dynamic), the upper bound of each dimension: Method::set_input takes any
  // shape of this rank within them, and nbytes is what the plan reserves at the bound.
  ArrayRef<int32_t> sizes;
  ArrayRef<uint8_t> dim_order;
  size_t nbytes;
  bool is_planned;
  bool is_dynamic;
};

class MethodMeta {
 public:
  static Result<MethodMeta> make(const ember_pte::ExecutionPlan* plan);

  const char* name() const;
  size_t num_inputs() const;
  Result<TensorInfo> input_tensor_meta(size_t index) const;
  size_t num_outputs() const;
  // Tag::Tensor, or Tag::Int/Double/Bool for a scalar output (a constant method's value).
  Result<Tag> output_tag(size_t index) const;
  // InvalidType for a scalar output.
  Result<TensorInfo> output_tensor_meta(size_t index) const;
  // Planned pools, memory id 1 first (memory id 0 stands for the constants and is not planned).
  size_t num_memory_planned_buffers() const;
  Result<size_t> memory_planned_buffer_size(size_t index) const;
  size_t num_instructions() const;
  // Mutable buffers: planned tensors loaded with an initial value (a KV cache, a running statistic), whose bytes
  // carry from one execute to the next. A method with any has state, so two loaded copies of it are not
  // interchangeable (the Python bindings then run it one call at a time instead of on several copies).
  size_t num_mutable_buffers() const;
  // Bytes Method::load takes from the method allocator, when that allocator's buffer is 16-byte aligned.
  // Includes the state the kernels' prepare steps keep (runtime/kernel/kernel_args.h) and, in a build with
  // backends, each delegate's records and backend state (an upper bound: up to 15 bytes of alignment per backend).
  size_t method_allocator_bytes() const { return method_allocator_bytes_; }
  // Bytes Method::load takes from the temp allocator (16-byte aligned) for the kernels' scratch, loaded for
  // `threads` threads (MemoryManager::threads): exact for the kernels linked into this binary, since each kernel
  // says what it needs from its arguments' shapes (and what each thread more adds, for a depthwise convolution).
  size_t scratch_bytes() const { return scratch_bytes_; }
  size_t scratch_bytes(int threads) const;

 private:
  friend Result<MethodMeta> delegates_method_meta(const Program*, const ember_pte::ExecutionPlan*);
  MethodMeta(const ember_pte::ExecutionPlan* plan, size_t bytes, size_t scratch)
      : plan_(plan), method_allocator_bytes_(bytes), scratch_bytes_(scratch) {}
  TensorInfo tensor_meta(int32_t value_index) const;

  const ember_pte::ExecutionPlan* plan_;
  size_t method_allocator_bytes_;
  size_t scratch_bytes_;  // on one thread
};

}  // namespace ember
