// A DataLoader over bytes already in memory (a C array in flash, a buffer from Python): zero copy.
#pragma once

#include <string.h>

#include "runtime/core/data_loader.h"

namespace ember {

class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)), size_(size) {}

  Result<FreeableBuffer> load(uint64_t offset, uint64_t size, const SegmentInfo&) override {
    EMBER_TRY(check_range(offset, size, size_));
    return FreeableBuffer(data_ + offset, static_cast<size_t>(size));
  }

  Error load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) override {
    EMBER_TRY(check_range(offset, size, size_));
    memcpy(destination, data_ + offset, static_cast<size_t>(size));
    return Error::Ok;
  }

  Result<uint64_t> size() const override { return static_cast<uint64_t>(size_); }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace ember
