// Fuzz target: a .pte from untrusted bytes, all the way through. Program::load from a buffer, then for every
// method its MethodMeta (every input and output description), load_method into exactly the memory MethodMeta
// asks for, and two execute() calls, with every portable, quantized and prim kernel linked (the registry a
// runtime for arbitrary programs has). Any crash, sanitizer report, leak or hang is a finding; refusals are
// fine. Also checked: a method that loads used exactly the bookkeeping bytes MethodMeta predicted.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace ember {
namespace {

// A program may claim any size; past this total (bookkeeping + pools) the method is skipped, not allocated:
// the fuzzer looks for crashes, and a real caller refuses such a program from these same MethodMeta numbers.
constexpr size_t kMaxMethodBytes = 8u << 20;
constexpr size_t kMaxPools = 16;
constexpr uint64_t kMaxInstructions = 4096;
constexpr size_t kTempBytes = 256u << 10;

// Exactly `size` bytes (at least one), 16-byte aligned, so AddressSanitizer sees any access past the end.
uint8_t* alloc_exact(size_t size) {
  return static_cast<uint8_t*>(aligned_alloc(16, size == 0 ? 16 : (size + 15) / 16 * 16));
}

void touch(const TensorInfo& info) {
  // Reading the whole description is what a caller does; the sanitizers check the arrays are really there.
  volatile size_t sink = info.nbytes;
  for (size_t d = 0; d < info.sizes.size(); ++d) sink = sink + static_cast<size_t>(info.sizes[d]);
  for (size_t d = 0; d < info.dim_order.size(); ++d) sink = sink + info.dim_order[d];
  (void)sink;
}

void run_method(const Program& program, const char* name) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return;
  (void)meta->name();
  (void)meta->num_instructions();
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    Result<TensorInfo> info = meta->input_tensor_meta(i);
    if (info.ok()) touch(*info);
  }
  for (size_t i = 0; i < meta->num_outputs(); ++i) {
    Result<TensorInfo> info = meta->output_tensor_meta(i);
    if (info.ok()) touch(*info);
  }

  const size_t num_pools = meta->num_memory_planned_buffers();
  if (num_pools > kMaxPools) return;
  size_t pool_sizes[kMaxPools];
  size_t total = meta->method_allocator_bytes();
  if (total > kMaxMethodBytes) return;
  for (size_t p = 0; p < num_pools; ++p) {
    Result<size_t> size = meta->memory_planned_buffer_size(p);
    if (!size.ok() || *size > kMaxMethodBytes - total) return;
    pool_sizes[p] = *size;
    total += *size;
  }

  Span<uint8_t> pools[kMaxPools];
  for (size_t p = 0; p < num_pools; ++p) {
    uint8_t* b = alloc_exact(pool_sizes[p]);
    memset(b, 0, pool_sizes[p]);
    pools[p] = Span<uint8_t>(b, pool_sizes[p]);
  }
  const size_t predicted = meta->method_allocator_bytes();
  uint8_t* method_buffer = alloc_exact(predicted);
  uint8_t* temp_buffer = alloc_exact(kTempBytes);
  MemoryAllocator method_alloc(method_buffer, predicted);
  MemoryAllocator temp_alloc(temp_buffer, kTempBytes);
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, num_pools));
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;

  Result<Method> method = program.load_method(name, &memory);
  if (method.ok()) {
    if (method_alloc.used_bytes() != predicted) {
      fprintf(stderr, "program_fuzz: method '%s' used %zu bookkeeping bytes; MethodMeta predicted %zu\n", name,
              method_alloc.used_bytes(), predicted);
      abort();
    }
    for (size_t i = 0; i < method->num_inputs(); ++i) (void)method->input(i);
    // A backward jump may never end, as a program may mean it to: a caller bounds such methods, as the runner
    // does (100M by default). Here 4096 instructions a run; past them execute() must fail by name, not hang.
    if (method->has_loops()) method->set_instruction_limit(kMaxInstructions);
    (void)method->execute();
    (void)method->execute();
    for (size_t i = 0; i < method->num_outputs(); ++i) (void)method->output(i);
  } else if (method_alloc.last_failed_request() != 0) {
    // Load ran out of the bytes MethodMeta promised were enough.
    fprintf(stderr, "program_fuzz: method '%s' needed %zu more bookkeeping bytes than the %zu MethodMeta predicted\n",
            name, method_alloc.last_failed_request(), predicted);
    abort();
  }

  free(temp_buffer);
  free(method_buffer);
  for (size_t p = 0; p < num_pools; ++p) free(pools[p].data());
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  BufferDataLoader loader(data, size);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) return 0;
  for (size_t i = 0; i < program->num_methods(); ++i) {
    Result<const char*> name = program->get_method_name(i);
    if (name.ok()) run_method(*program, *name);
  }
  // An unknown name must be a refusal, not a crash.
  (void)program->method_meta("no such method");
  return 0;
}
