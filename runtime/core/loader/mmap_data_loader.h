// Maps a program file read-only. Loads hand out pointers into the mapping, so constants are paged in by the
// kernel only when touched and never copied.
#pragma once

#include "runtime/core/data_loader.h"

namespace ember {

class MmapDataLoader final : public DataLoader {
 public:
  static Result<MmapDataLoader> open(const char* path);

  MmapDataLoader(MmapDataLoader&& other);
  MmapDataLoader(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader() override;

  Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo& info) override;
  Error load_into(uint64_t offset, uint64_t size, const SegmentInfo& info, void* destination) override;
  Result<uint64_t> size() const override { return size_; }

 private:
  MmapDataLoader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  const uint8_t* data_;
  uint64_t size_;
};

}  // namespace ember
