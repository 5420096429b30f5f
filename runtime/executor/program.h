// A loaded .pte: its flatbuffer (verified), its constant segment, and access to its other segments. Immutable
// once loaded, so methods loaded from one Program may run on several threads at once, all reading its constants;
// load_method itself is as thread-safe as the DataLoader (MmapDataLoader and BufferDataLoader are; FileDataLoader
// takes from one MemoryAllocator, so load from one thread at a time with it). docs/threads.md.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/data_loader.h"
#include "runtime/core/external_data.h"
#include "runtime/core/result.h"
#include "runtime/executor/memory_manager.h"

namespace ember_pte {
struct Program;
struct ExecutionPlan;
}  // namespace ember_pte

namespace ember {

class Method;
class MethodMeta;

class Program {
 public:
  enum class Verification : uint8_t {
    Minimal,              // the header only (trusted input, e.g. a program baked into flash and checked at build)
    InternalConsistency,  // flatbuffer verifier plus every index, offset and size (the default)
  };

  static Result<Program> load(DataLoader* loader, Verification verification = Verification::InternalConsistency);

  size_t num_methods() const;
  Result<const char*> get_method_name(size_t index) const;
  Result<MethodMeta> method_meta(const char* method_name) const;
  // `data`: where the method's external tensors are (a FlatTensorFile, runtime/data_file), borrowed for the
  // method's life; null when the program keeps all its constants (load fails, naming the tensor, otherwise).
  Result<Method> load_method(const char* method_name, MemoryManager* memory, const ExternalData* data = nullptr) const;

  // Internal (used by Method): constant tensor `index` of `nbytes`, and the initial value of a planned tensor.
  Result<const void*> constant_data(uint32_t index, size_t nbytes) const;
  Error load_initial_value(uint32_t segment_list, uint32_t index, size_t nbytes, void* destination) const;
  // Segment `index` of the program (checked against the file at load), e.g. a delegate's blob.
  Result<FreeableBuffer> load_segment(uint32_t index, SegmentInfo::Type type) const;
  // The named data entry `key` (Program.named_data: weights a delegate references by key), or NotFound.
  Result<FreeableBuffer> load_named_data(const char* key) const;
  const ember_pte::Program* flatbuffer() const { return program_; }
  Result<const ember_pte::ExecutionPlan*> find_plan(const char* method_name) const;

  Program(Program&&) = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  Program& operator=(Program&&) = delete;

 private:
  Program(DataLoader* loader, FreeableBuffer&& program_data, const ember_pte::Program* program, uint64_t segment_base,
          FreeableBuffer&& constants)
      : loader_(loader),
        program_data_(static_cast<FreeableBuffer&&>(program_data)),
        program_(program),
        segment_base_(segment_base),
        constants_(static_cast<FreeableBuffer&&>(constants)) {}

  DataLoader* loader_;
  FreeableBuffer program_data_;
  const ember_pte::Program* program_;
  uint64_t segment_base_;
  // The constant segment (empty when the program has no constants), loaded with the program rather than by the
  // first method that needs it: a lazy load would be a write that two threads loading methods could race on.
  FreeableBuffer constants_;
};

}  // namespace ember
