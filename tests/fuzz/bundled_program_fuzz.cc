// Fuzz target: a bundled program (.bpte) from untrusted bytes. BundledProgram::parse, every accessor, and when
// the embedded program loads, each suite's method loaded into the memory MethodMeta asks for (bounded) and each
// case's inputs loaded, executed and compared. Any crash, sanitizer report, leak or hang is a finding;
// refusals are fine.
#include <stdlib.h>
#include <string.h>

#include "runtime/bundled/bundled_program.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace ember {
namespace {

constexpr size_t kMaxMethodBytes = 8u << 20;
constexpr size_t kMaxPools = 16;
constexpr size_t kTempBytes = 256u << 10;
constexpr size_t kMaxCases = 64;

uint8_t* alloc_exact(size_t size) {
  return static_cast<uint8_t*>(aligned_alloc(16, size == 0 ? 16 : (size + 15) / 16 * 16));
}

void run_suite(const Program& program, const bundled::BundledProgram& bundle, size_t s) {
  Result<MethodMeta> meta = program.method_meta(bundle.method_name(s));
  if (!meta.ok()) return;
  const size_t num_pools = meta->num_memory_planned_buffers();
  if (num_pools > kMaxPools) return;
  size_t sizes[kMaxPools];
  size_t total = meta->method_allocator_bytes();
  if (total > kMaxMethodBytes) return;
  for (size_t p = 0; p < num_pools; ++p) {
    Result<size_t> size = meta->memory_planned_buffer_size(p);
    if (!size.ok() || *size > kMaxMethodBytes - total) return;
    sizes[p] = *size;
    total += *size;
  }
  Span<uint8_t> pools[kMaxPools];
  for (size_t p = 0; p < num_pools; ++p) {
    pools[p] = Span<uint8_t>(alloc_exact(sizes[p]), sizes[p]);
    memset(pools[p].data(), 0, sizes[p]);
  }
  uint8_t* method_buffer = alloc_exact(meta->method_allocator_bytes());
  uint8_t* temp_buffer = alloc_exact(kTempBytes);
  MemoryAllocator method_alloc(method_buffer, meta->method_allocator_bytes());
  MemoryAllocator temp_alloc(temp_buffer, kTempBytes);
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, num_pools));
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;
  Result<Method> method = program.load_method(bundle.method_name(s), &memory);
  if (method.ok()) {
    method->set_instruction_limit(100000);
    const size_t cases = bundle.num_cases(s) < kMaxCases ? bundle.num_cases(s) : kMaxCases;
    for (size_t c = 0; c <= cases; ++c) {  // one past the end: a refusal
      if (bundle.load_inputs(method.get(), s, c) != Error::Ok) continue;
      if (method->execute() != Error::Ok) continue;
      bundled::CaseReport report;
      (void)bundle.check_outputs(method.get(), s, c, bundle.atol(s), bundle.rtol(s), &report);
    }
  }
  free(temp_buffer);
  free(method_buffer);
  for (size_t p = 0; p < num_pools; ++p) free(pools[p].data());
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  // A file read into memory is aligned; fuzzer bytes are not: copy them as a loader would.
  uint8_t* copy = static_cast<uint8_t*>(aligned_alloc(32, size == 0 ? 32 : (size + 31) / 32 * 32));
  if (size) memcpy(copy, data, size);
  Result<bundled::BundledProgram> bundle = bundled::BundledProgram::parse(copy, size);
  if (bundle.ok()) {
    for (size_t s = 0; s <= bundle->num_suites(); ++s) {
      (void)bundle->method_name(s);
      (void)bundle->num_cases(s);
      (void)bundle->atol(s);
    }
    BufferDataLoader loader(bundle->program_data(), bundle->program_size());
    Result<Program> program = Program::load(&loader);
    if (program.ok()) {
      for (size_t s = 0; s < bundle->num_suites(); ++s) run_suite(*program, *bundle, s);
    }
  }
  free(copy);
  return 0;
}
