// Load, run and destroy programs over and over, as a long-running host process would, so a leak checker can see
// anything left behind: tests/runtime/test_valgrind.py runs this under valgrind --leak-check=full. On its own it
// checks the resources valgrind's heap check does not see: file descriptors and memory mappings (the mmap and
// file loaders own both), which must not grow past their first-cycle counts in any later cycle.
//
//   load_cycles [--no-mapping-check] CYCLES PROGRAM.pte...
//
// --no-mapping-check: under valgrind, whose own allocator maps memory as it goes (its leak check covers that).
// Each cycle, for each program and each loader (mmap, file): load the program, then for every method allocate
// its pools and bookkeeping exactly as MethodMeta says, load it, set every input to zeros, execute twice, read
// every output, and free it all. Exit 0 when every step succeeded and nothing was left behind.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/loader/file_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace ember {
namespace {

// 16-byte-aligned heap storage, freed with the object.
struct Buffer {
  std::vector<uint64_t> words;
  explicit Buffer(size_t bytes) : words(bytes / 8 + 3) {}
  uint8_t* data() {
    const uintptr_t p = reinterpret_cast<uintptr_t>(words.data());
    return reinterpret_cast<uint8_t*>((p + 15) & ~static_cast<uintptr_t>(15));
  }
};

bool fail(const char* what, const std::string& path, Error e) {
  fprintf(stderr, "load_cycles: %s: %s failed: %s\n", path.c_str(), what, error_name(e));
  return false;
}

bool run_method(const Program& program, const char* name, const std::string& path) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return fail("method_meta", path, meta.error());
  std::vector<std::unique_ptr<Buffer>> storage;
  std::vector<Span<uint8_t>> pools;
  for (size_t p = 0; p < meta->num_memory_planned_buffers(); ++p) {
    Result<size_t> size = meta->memory_planned_buffer_size(p);
    if (!size.ok()) return fail("memory_planned_buffer_size", path, size.error());
    storage.emplace_back(new Buffer(*size));
    pools.emplace_back(storage.back()->data(), *size);
  }
  HierarchicalAllocator planned(Span<Span<uint8_t>>(pools.data(), pools.size()));
  Buffer method_buffer(meta->method_allocator_bytes()), temp_buffer(1 << 20);
  MemoryAllocator method_alloc(method_buffer.data(), meta->method_allocator_bytes());
  MemoryAllocator temp_alloc(temp_buffer.data(), 1 << 20);
  MemoryManager memory{&method_alloc, &planned, &temp_alloc};
  Result<Method> method = program.load_method(name, &memory);
  if (!method.ok()) return fail("load_method", path, method.error());
  for (int run = 0; run < 2; ++run) {
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      Result<Tensor> t = method->input(i);
      if (!t.ok()) return fail("input", path, t.error());
      std::vector<uint8_t> zeros(t->nbytes());
      Error e = method->set_input(i, t->scalar_type(), t->sizes(), zeros.data(), zeros.size());
      if (e != Error::Ok) return fail("set_input", path, e);
    }
    Error e = method->execute();
    if (e != Error::Ok) return fail("execute", path, e);
  }
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    Result<Tensor> t = method->output(i);
    if (!t.ok()) return fail("output", path, t.error());
    // Read every output byte: memcheck reports any that execution left undefined.
    const uint8_t* bytes = static_cast<const uint8_t*>(t->const_data_ptr());
    for (size_t b = 0; b < t->nbytes(); ++b) sink = static_cast<uint8_t>(sink + (bytes[b] == 0 ? 1 : 2));
  }
  (void)sink;
  return true;
}

bool run_program(Program& program, const std::string& path) {
  for (size_t m = 0; m < program.num_methods(); ++m) {
    Result<const char*> name = program.get_method_name(m);
    if (!name.ok()) return fail("get_method_name", path, name.error());
    if (!run_method(program, *name, path)) return false;
  }
  return true;
}

bool cycle(const std::string& path) {
#ifdef EMBER_LOAD_CYCLES_LEAK
  // The checker's own check (test_valgrind.py): one heap block, one descriptor and one mapping lost per cycle.
  void* volatile lost[3] = {malloc(64), fopen(path.c_str(), "rb"),
                            mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)};
  if (lost[0] == nullptr) return false;
#endif
  {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    if (!loader.ok()) return fail("MmapDataLoader::open", path, loader.error());
    Result<Program> program = Program::load(&loader.get());
    if (!program.ok()) return fail("Program::load (mmap)", path, program.error());
    if (!run_program(program.get(), path)) return false;
  }
  Result<FileDataLoader> probe = FileDataLoader::open(path.c_str(), nullptr);
  if (!probe.ok()) return fail("FileDataLoader::open", path, probe.error());
  Buffer file_buffer(static_cast<size_t>(*probe->size()) + 4096);
  MemoryAllocator file_alloc(file_buffer.data(), static_cast<size_t>(*probe->size()) + 4096);
  Result<FileDataLoader> loader = FileDataLoader::open(path.c_str(), &file_alloc);
  if (!loader.ok()) return fail("FileDataLoader::open", path, loader.error());
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) return fail("Program::load (file)", path, program.error());
  return run_program(program.get(), path);
}

// Entries of /proc/self/fd: what the loaders open.
size_t count_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  size_t n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

// Bytes mapped outside the brk heap and the stack (mmap'd programs and allocations; neighbouring anonymous
// mappings merge, so a count of lines would miss one).
size_t count_mappings() {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == nullptr) return 0;
  size_t bytes = 0;
  char line[512];
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long start = 0, end = 0;
    if (sscanf(line, "%llx-%llx", &start, &end) != 2) continue;
    if (strstr(line, "[heap]") == nullptr && strstr(line, "[stack]") == nullptr) bytes += end - start;
  }
  fclose(f);
  return bytes;
}

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  const bool check_mappings = !(argc > 1 && strcmp(argv[1], "--no-mapping-check") == 0);
  if (!check_mappings) --argc, ++argv;
  const int cycles = argc > 1 ? atoi(argv[1]) : 0;
  if (cycles < 2 || argc < 3) {
    fprintf(stderr, "usage: load_cycles [--no-mapping-check] CYCLES(>=2) PROGRAM.pte...\n");
    return 2;
  }
  size_t fds = 0, maps = 0;  // after the first cycle
  for (int c = 0; c < cycles; ++c) {
    for (int i = 2; i < argc; ++i) {
      if (!ember::cycle(argv[i])) return 1;
    }
    const size_t now_fds = ember::count_fds(), now_maps = check_mappings ? ember::count_mappings() : 0;
    if (c == 0) {
      fds = now_fds, maps = now_maps;  // after one cycle: whatever the C library set up once is in place
    } else if (now_fds > fds || now_maps > maps) {
      // Only growth is a leak: an allocator may hand a mapping back between cycles (valgrind's does).
      fprintf(stderr, "load_cycles: cycle %d left %zu more file descriptors and %zu more bytes mapped\n", c,
              now_fds > fds ? now_fds - fds : 0, now_maps > maps ? now_maps - maps : 0);
      return 3;
    }
  }
  printf("load_cycles: %d cycles of %d programs (mmap and file loaders), no descriptors or mappings left behind\n",
         cycles, argc - 2);
  return 0;
}
