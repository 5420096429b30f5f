// Firmware built outside Ember's build: a plain Makefile links the Cortex-M55 SDK bundle (docs/sdk.md). It runs the
// .pte that model.S embeds, once, on the MPS3 AN547 board (QEMU's mps3-an547), with I/O over semihosting:
//
//   qemu-system-arm -M mps3-an547 -nographic -semihosting-config enable=on,target=native,arg=app,arg=IN.bin,...
//       -kernel app.elf
//   app [INPUT.bin]... (host files, raw little-endian, each exactly its input's size; missing: zeros)
//
// Output i is written to the host as output_<i>.bin. The method's planned pools, its allocator and the kernels'
// scratch are carved from the arena the board's linker script leaves at the end of DTCM, each sized by MethodMeta.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "platforms/bare_metal/semihosting.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

using namespace ember;

extern "C" uint8_t __method_arena_start[], __method_arena_end[];  // mps3_an547.ld
extern "C" const uint8_t ember_app_model[], ember_app_model_end[];  // model.S

namespace {

constexpr size_t kMaxPools = 4;

void say(const char* format, ...) __attribute__((format(printf, 1, 2)));
void say(const char* format, ...) {
  char line[160];
  va_list args;
  va_start(args, format);
  const int n = vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  if (n > 0) semihosting::write_stdout(line, static_cast<size_t>(n) < sizeof(line) ? n : sizeof(line) - 1);
}

// Bump allocation from the arena, 16-byte aligned; nullptr when it does not fit.
struct Arena {
  uint8_t* next = __method_arena_start;
  uint8_t* take(size_t bytes) {
    uint8_t* p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(next) + 15) & ~uintptr_t{15});
    if (bytes > static_cast<size_t>(__method_arena_end - p)) return nullptr;
    next = p + bytes;
    return p;
  }
};

int read_input(Method& method, size_t index, const char* path) {
  Result<Tensor> t = method.input(index);
  if (!t.ok()) return 4;
  // In place: the planned input buffer receives the file's bytes.
  uint8_t* data = t->mutable_data_ptr<uint8_t>();
  memset(data, 0, t->nbytes());
  if (path != nullptr) {
    const int h = semihosting::open(path, false);
    const size_t got = h >= 0 ? semihosting::read(h, data, t->nbytes()) : 0;
    if (h >= 0) semihosting::close(h);
    if (got != t->nbytes()) {
      say("app: input %u needs %u bytes from %s\n", static_cast<unsigned>(index), static_cast<unsigned>(t->nbytes()),
          path);
      return 4;
    }
  }
  return 0;
}

int write_outputs(const Method& method) {
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    Result<Tensor> t = method.output(i);
    if (!t.ok()) continue;
    char path[32];
    snprintf(path, sizeof(path), "output_%u.bin", static_cast<unsigned>(i));
    const int h = semihosting::open(path, true);
    const size_t wrote = h >= 0 ? semihosting::write(h, t->const_data_ptr(), t->nbytes()) : 0;
    if (h >= 0) semihosting::close(h);
    if (wrote != t->nbytes()) {
      say("app: cannot write output %u (%s) on the host\n", static_cast<unsigned>(i), path);
      return 6;
    }
    say("output %u: %u bytes written to %s\n", static_cast<unsigned>(i), static_cast<unsigned>(t->nbytes()), path);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BufferDataLoader loader(ember_app_model, static_cast<size_t>(ember_app_model_end - ember_app_model));
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    say("app: the embedded program does not load: %s\n", error_name(program.error()));
    return 3;
  }
  Result<MethodMeta> meta = program->method_meta("forward");
  if (!meta.ok() || meta->num_memory_planned_buffers() > kMaxPools) return 3;
  Arena arena;
  Span<uint8_t> pools[kMaxPools];
  for (size_t p = 0; p < meta->num_memory_planned_buffers(); ++p) {
    const size_t size = meta->memory_planned_buffer_size(p).get();
    uint8_t* data = arena.take(size);
    if (data == nullptr) {
      say("app: planned pool %u (%u bytes) does not fit the arena\n", static_cast<unsigned>(p),
          static_cast<unsigned>(size));
      return 3;
    }
    pools[p] = Span<uint8_t>(data, size);
  }
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools, meta->num_memory_planned_buffers()));
  const size_t method_bytes = meta->method_allocator_bytes(), scratch_bytes = meta->scratch_bytes();
  uint8_t* method_buffer = arena.take(method_bytes);
  uint8_t* scratch = arena.take(scratch_bytes);
  if (method_buffer == nullptr || (scratch_bytes != 0 && scratch == nullptr)) {
    say("app: the method allocator (%u bytes) and kernel scratch (%u bytes) do not fit the arena\n",
        static_cast<unsigned>(method_bytes), static_cast<unsigned>(scratch_bytes));
    return 3;
  }
  MemoryAllocator method_alloc(method_buffer, method_bytes);
  MemoryAllocator temp_alloc(scratch, scratch_bytes);
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;
  Result<Method> method = program->load_method("forward", &memory);
  if (!method.ok()) {
    say("app: forward did not load: %s\n", error_name(method.error()));
    return 3;
  }
  for (size_t i = 0; i < method->num_inputs(); ++i) {
    const int status = read_input(method.get(), i, static_cast<int>(i) + 1 < argc ? argv[i + 1] : nullptr);
    if (status != 0) return status;
  }
  const Error e = method->execute();
  if (e != Error::Ok) {
    say("app: execute failed: %s\n", error_name(e));
    return 5;
  }
  return write_outputs(method.get());
}
