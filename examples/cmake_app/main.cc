// An application outside Ember's build: it links an SDK bundle through find_package(Ember) (CMakeLists.txt),
// loads a .pte, runs its forward method once and writes each tensor output's bytes.
//
//   ember_app MODEL.pte OUT_PREFIX [INPUT.bin]...
//
// Inputs are raw little-endian tensors of exactly the planned size (all zeros when no file is given); output i is
// written to OUT_PREFIX<i>.bin. Every buffer is sized from MethodMeta before the method is loaded.
#include <ember/version.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

using namespace ember;

namespace {

// Buffers for the method's planned pools, its allocator and the kernels' scratch, owned until main returns.
struct Buffers {
  std::vector<std::vector<uint8_t>> pools;
  std::vector<Span<uint8_t>> spans;
  std::vector<uint8_t> method_bytes;
  std::vector<uint8_t> scratch;
};

bool size_buffers(const MethodMeta& meta, Buffers* b) {
  for (size_t p = 0; p < meta.num_memory_planned_buffers(); ++p) {
    Result<size_t> size = meta.memory_planned_buffer_size(p);
    if (!size.ok()) {
      fprintf(stderr, "ember_app: pool %zu has no size: %s\n", p, error_name(size.error()));
      return false;
    }
    b->pools.emplace_back(size.get());
  }
  for (auto& pool : b->pools) b->spans.emplace_back(pool.data(), pool.size());
  b->method_bytes.resize(meta.method_allocator_bytes());
  b->scratch.resize(meta.scratch_bytes());
  return true;
}

bool read_input(Method& method, size_t index, const char* path) {
  Result<Tensor> t = method.input(index);
  if (!t.ok()) {
    fprintf(stderr, "ember_app: input %zu is not a tensor\n", index);
    return false;
  }
  std::vector<uint8_t> bytes(t->nbytes());
  if (path != nullptr) {
    FILE* f = fopen(path, "rb");
    const size_t got = f ? fread(bytes.data(), 1, bytes.size(), f) : 0;
    if (f) fclose(f);
    if (got != bytes.size()) {
      fprintf(stderr, "ember_app: input %zu needs %zu bytes from %s; read %zu\n", index, bytes.size(), path, got);
      return false;
    }
  }
  Error e = method.set_input(index, t->scalar_type(), t->sizes(), bytes.data(), bytes.size());
  if (e != Error::Ok) fprintf(stderr, "ember_app: input %zu refused: %s\n", index, error_name(e));
  return e == Error::Ok;
}

bool write_outputs(const Method& method, const char* prefix) {
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    Result<Tensor> t = method.output(i);
    if (!t.ok()) continue;  // a scalar output: nothing to write
    char path[1024];
    snprintf(path, sizeof(path), "%s%zu.bin", prefix, i);
    FILE* f = fopen(path, "wb");
    const size_t wrote = f ? fwrite(t->const_data_ptr<uint8_t>(), 1, t->nbytes(), f) : 0;
    if (f) fclose(f);
    if (wrote != t->nbytes()) {
      fprintf(stderr, "ember_app: cannot write output %zu (%zu bytes) to %s\n", i, t->nbytes(), path);
      return false;
    }
    printf("output %zu: %zu bytes -> %s\n", i, t->nbytes(), path);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.pte OUT_PREFIX [INPUT.bin]...\n", argv[0]);
    return 2;
  }
  printf("Ember %s\n", EMBER_VERSION_STRING);
  Result<MmapDataLoader> loader = MmapDataLoader::open(argv[1]);
  if (!loader.ok()) {
    fprintf(stderr, "ember_app: cannot read %s: %s\n", argv[1], error_name(loader.error()));
    return 3;
  }
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) {
    fprintf(stderr, "ember_app: %s does not load: %s\n", argv[1], error_name(program.error()));
    return 3;
  }
  Result<MethodMeta> meta = program->method_meta("forward");
  Buffers b;
  if (!meta.ok() || !size_buffers(meta.get(), &b)) return 3;
  HierarchicalAllocator planned(Span<Span<uint8_t>>(b.spans.data(), b.spans.size()));
  MemoryAllocator method_alloc(b.method_bytes.data(), b.method_bytes.size());
  MemoryAllocator temp_alloc(b.scratch.data(), b.scratch.size());
  MemoryManager memory;
  memory.method_allocator = &method_alloc;
  memory.planned_memory = &planned;
  memory.temp_allocator = &temp_alloc;
  Result<Method> method = program->load_method("forward", &memory);
  if (!method.ok()) {
    fprintf(stderr, "ember_app: forward did not load: %s\n", error_name(method.error()));
    return 3;
  }
  for (size_t i = 0; i < method->num_inputs(); ++i) {
    const char* path = static_cast<int>(i) + 3 < argc ? argv[i + 3] : nullptr;
    if (!read_input(method.get(), i, path)) return 4;
  }
  Error e = method->execute();
  if (e != Error::Ok) {
    fprintf(stderr, "ember_app: execute failed: %s\n", error_name(e));
    return 5;
  }
  return write_outputs(method.get(), argv[2]) ? 0 : 6;
}
