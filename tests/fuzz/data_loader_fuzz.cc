// Fuzz target: the data loaders (buffer, file, mmap) asked for hostile ranges. The input is a script of up to
// 16 requests followed by the file's content; each request picks a loader, load or load_into, an offset and a
// size (raw 64-bit numbers or ones near the file's size and the top of the range). A request either fails with
// an error or hands back exactly the file's bytes for that range, which is checked byte for byte.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/loader/file_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "tests/fuzz/fuzz_input.h"

namespace ember {
namespace {

constexpr size_t kRequestBytes = 1 + 1 + 8 + 1 + 8;  // kind, offset mode, offset, size mode, size
constexpr size_t kMaxRequests = 16;
constexpr size_t kAllocatorBytes = 4096;  // the FileDataLoader's memory: smaller than some files, on purpose

// The file the file and mmap loaders read: an in-memory file, rewritten for every input.
int g_fd = -1;
char g_path[64];

[[noreturn]] void fail(const char* what, uint64_t offset, uint64_t size) {
  fprintf(stderr, "data_loader_fuzz: %s (offset %llu, size %llu)\n", what, static_cast<unsigned long long>(offset),
          static_cast<unsigned long long>(size));
  abort();
}

uint64_t pick(fuzz::FuzzInput& in, uint8_t mode, uint64_t file_size) {
  const uint64_t raw = in.u64();
  switch (mode % 4) {
    case 0: return raw;
    case 1: return raw % (file_size + 1);                  // inside the file, end included
    case 2: return file_size + (raw % 3);                  // at and just past the end
    default: return UINT64_MAX - (raw % (file_size + 2));  // where offset + size wraps
  }
}

void check_range_result(const Result<FreeableBuffer>& r, const uint8_t* content, uint64_t file_size, uint64_t offset,
                        uint64_t size, bool may_lack_memory) {
  const bool in_range = offset <= file_size && size <= file_size - offset;
  if (!r.ok()) {
    if (in_range && !(may_lack_memory && r.error() == Error::MemoryAllocationFailed)) {
      fail("a range inside the file was refused", offset, size);
    }
    return;
  }
  if (!in_range) fail("a range outside the file was loaded", offset, size);
  if (r->size() != size) fail("the loaded buffer has the wrong size", offset, size);
  if (size > 0 && memcmp(r->data(), content + offset, size) != 0) fail("the loaded bytes differ", offset, size);
}

void check_into_result(Error e, const uint8_t* content, uint64_t file_size, uint64_t offset, uint64_t size,
                       const uint8_t* out) {
  const bool in_range = offset <= file_size && size <= file_size - offset;
  if (e != Error::Ok) {
    if (in_range) fail("a range inside the file was refused by load_into", offset, size);
    return;
  }
  if (!in_range) fail("load_into read a range outside the file", offset, size);
  if (size > 0 && memcmp(out, content + offset, size) != 0) fail("load_into's bytes differ", offset, size);
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ember::g_fd = memfd_create("data_loader_fuzz", 0);
  if (ember::g_fd < 0) {
    perror("data_loader_fuzz: memfd_create");
    abort();
  }
  snprintf(ember::g_path, sizeof(ember::g_path), "/proc/self/fd/%d", ember::g_fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::FuzzInput script(data, size);
  const size_t num_requests = script.u8() % (kMaxRequests + 1);
  const size_t script_bytes = 1 + num_requests * kRequestBytes;
  const uint8_t* content = size > script_bytes ? data + script_bytes : data + size;
  const uint64_t file_size = size > script_bytes ? size - script_bytes : 0;

  if (ftruncate(g_fd, 0) != 0 || pwrite(g_fd, content, file_size, 0) != static_cast<ssize_t>(file_size)) {
    perror("data_loader_fuzz: writing the file");
    abort();
  }

  alignas(16) static uint8_t pool[kAllocatorBytes];
  MemoryAllocator allocator(pool, sizeof(pool));
  BufferDataLoader buffer_loader(content, file_size);
  Result<FileDataLoader> file_loader = FileDataLoader::open(g_path, &allocator);
  Result<MmapDataLoader> mmap_loader = MmapDataLoader::open(g_path);
  if (!file_loader.ok() || !mmap_loader.ok()) fail("cannot open the file", 0, file_size);
  DataLoader* loaders[3] = {&buffer_loader, &file_loader.get(), &mmap_loader.get()};
  for (DataLoader* l : loaders) {
    Result<uint64_t> s = l->size();
    if (!s.ok() || *s != file_size) fail("size() differs from the file's", 0, file_size);
  }

  for (size_t i = 0; i < num_requests; ++i) {
    const uint8_t kind = script.u8();
    const uint8_t offset_mode = script.u8();
    const uint64_t offset = pick(script, offset_mode, file_size);
    const uint8_t size_mode = script.u8();
    const uint64_t request = pick(script, size_mode, file_size);
    DataLoader* loader = loaders[kind % 3];
    const SegmentInfo info{static_cast<SegmentInfo::Type>((kind >> 3) % 5), static_cast<size_t>(kind >> 6)};
    if ((kind >> 2) & 1) {
      // A destination exactly as large as a valid request, and a single byte otherwise: a loader that writes
      // before checking the range is caught by AddressSanitizer.
      const bool in_range = offset <= file_size && request <= file_size - offset;
      const size_t capacity = in_range && request > 0 ? static_cast<size_t>(request) : 1;
      uint8_t* out = static_cast<uint8_t*>(malloc(capacity));
      check_into_result(loader->load_into(offset, request, info, out), content, file_size, offset, request, out);
      free(out);
    } else {
      Result<FreeableBuffer> r = loader->load(offset, request, info);
      check_range_result(r, content, file_size, offset, request, loader == loaders[1]);
    }
  }
  return 0;
}
