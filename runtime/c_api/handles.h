// What the C API's opaque handles hold (ember.h declares them incomplete).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <memory>
#include <vector>

#include "runtime/c_api/include/ember/ember.h"
#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/data_file/flat_tensor_file.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/threads/posix_thread_pool.h"

namespace ember {
namespace c_api {

// Heap bytes aligned to EMBER_BUFFER_ALIGNMENT, refused (null) rather than aborting when malloc fails.
class AlignedBlock {
 public:
  AlignedBlock() = default;
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  ~AlignedBlock();
  // False when the allocation failed; `bytes` 0 gives a valid empty block.
  bool allocate(size_t bytes);
  uint8_t* data() const { return aligned_; }
  size_t size() const { return size_; }

 private:
  void* raw_ = nullptr;
  uint8_t* aligned_ = nullptr;
  size_t size_ = 0;
};

// Struct-size versioning: a struct whose `size` is below `minimum` (the first published layout) is refused.
bool struct_size_ok(const char* call, const char* type, size_t size, size_t minimum, ember_status* status);

}  // namespace c_api
}  // namespace ember

struct ember_program {
  ember::c_api::AlignedBlock storage;  // the program's bytes when read from a file or copied from a buffer
  std::unique_ptr<ember::BufferDataLoader> buffer_loader;
  std::unique_ptr<ember::MmapDataLoader> mmap_loader;
  std::unique_ptr<ember::MmapDataLoader> data_loader;  // the .ptd, mapped
  std::unique_ptr<ember::FlatTensorFile> data_file;
  std::unique_ptr<ember::Program> program;
  ember::PosixThreadPool* pool = nullptr;
  int threads = 1;
  // Methods point into the program: destroying it with methods alive defers the release to the last of them.
  std::atomic<size_t> live_methods{0};
  std::atomic<bool> released{false};
  ~ember_program() { ember::PosixThreadPool::destroy(pool); }
};

struct ember_method {
  ember_program* program = nullptr;
  std::vector<std::unique_ptr<ember::c_api::AlignedBlock>> owned;  // Ember-allocated memory (empty for caller memory)
  std::vector<ember::Span<uint8_t>> pools;
  std::unique_ptr<ember::HierarchicalAllocator> planned;
  std::unique_ptr<ember::MemoryAllocator> method_allocator;
  std::unique_ptr<ember::MemoryAllocator> temp_allocator;
  ember::MemoryManager memory;
  std::unique_ptr<ember::Method> method;
  std::vector<void*> planned_input_data;  // each input's planned bytes, restored after point_input
  std::vector<size_t> planned_input_capacity;
  std::vector<uint64_t> scalar_outputs;  // storage for rank-0 views of scalar outputs
};
