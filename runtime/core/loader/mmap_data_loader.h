// Maps a program file read-only, one mapping per load: constants are paged in by the OS only when touched and
// never copied, and freeing a loaded buffer (e.g. a backend's blob after the backend took its own copy) unmaps
// it and gives the address space back. load_into reads with pread: copying through a mapping would only add
// page faults.
#pragma once

#include "runtime/core/data_loader.h"

namespace ember {

class MmapDataLoader final : public DataLoader {
 public:
  // OnDemand: pages come in as they are touched. Prefault: each load's pages are read in by the mapping call itself
  // (MAP_POPULATE), for a program whose first run touches every constant anyway (an LLM's weights): the faults are
  // paid at load, in the kernel's batches, instead of one by one inside the first run's matrix products.
  enum class Residency { OnDemand, Prefault };

  static Result<MmapDataLoader> open(const char* path, Residency residency = Residency::OnDemand);

  MmapDataLoader(MmapDataLoader&& other);
  MmapDataLoader(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader();

  // The buffer points into a private read-only mapping that lives until the buffer is freed; it may outlive
  // this loader.
  Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo& info) override;
  Error load_into(uint64_t offset, uint64_t size, const SegmentInfo& info, void* destination) override;
  Result<uint64_t> size() const override { return file_size_; }

  // Brings the pages of [data, data + bytes), inside a buffer this loader returned, into the page table now, as
  // Prefault does for a whole load: for a caller that knows which parts of an on-demand load its first run reads
  // whole (runtime/executor/constant_use.h). A hint: nothing fails.
  static void prefault(const void* data, size_t bytes);

 private:
  MmapDataLoader(int fd, uint64_t file_size, uint64_t page_size, Residency residency)
      : fd_(fd), file_size_(file_size), page_size_(page_size), residency_(residency) {}

  int fd_;
  uint64_t file_size_;
  uint64_t page_size_;
  Residency residency_;
};

}  // namespace ember
