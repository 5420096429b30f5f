// A .ptd file (ExecuTorch's FlatTensor, "FT01"; schema/flat_tensor.fbs): named tensors that programs keep outside
// themselves. load() reads and checks the flatbuffer (a .ptd is untrusted input: every offset, size, index and
// layout is verified before anything is used), then loads the segment data as one buffer: with an MmapDataLoader,
// one mapping, whose pages every method of every program using this file points into. Not part of the runtime
// core: a runner links it only when it runs programs with external data.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/data_loader.h"
#include "runtime/core/external_data.h"
#include "runtime/core/result.h"

namespace ember_ptd {
struct FlatTensor;
}

namespace ember {

class FlatTensorFile final : public ExternalData {
 public:
  // Reads the file `loader` serves (which must outlive nothing: what is loaded is owned by the result).
  static Result<FlatTensorFile> load(DataLoader* loader);

  size_t num_entries() const;
  // Entry `index`'s name; InvalidArgument when out of range.
  Result<const char*> key(size_t index) const;
  // The raw bytes stored under `key` (a tensor or an opaque blob); NotFound when there is none.
  Result<ArrayRef<uint8_t>> find(const char* key) const;
  // Bytes of segment data this file holds (mapped or loaded once).
  size_t segment_bytes() const { return segments_.size(); }

  Result<const void*> tensor(const char* name, ScalarType type, ArrayRef<int32_t> sizes, size_t nbytes) const override;

  FlatTensorFile(FlatTensorFile&&) = default;
  FlatTensorFile(const FlatTensorFile&) = delete;
  FlatTensorFile& operator=(const FlatTensorFile&) = delete;
  FlatTensorFile& operator=(FlatTensorFile&&) = delete;
  ~FlatTensorFile() = default;

 private:
  FlatTensorFile(FreeableBuffer&& flatbuffer, FreeableBuffer&& segments, const ember_ptd::FlatTensor* root)
      : flatbuffer_(static_cast<FreeableBuffer&&>(flatbuffer)),
        segments_(static_cast<FreeableBuffer&&>(segments)),
        root_(root) {}

  Result<size_t> index_of(const char* key) const;

  FreeableBuffer flatbuffer_;
  FreeableBuffer segments_;
  const ember_ptd::FlatTensor* root_;
};

// Several data files asked in turn (a base model's .ptd and an adapter's): the first that has a name answers.
// Borrows the files, which must outlive it.
class ExternalDataList final : public ExternalData {
 public:
  ExternalDataList(const ExternalData* const* files, size_t count) : files_(files), count_(count) {}
  Result<const void*> tensor(const char* name, ScalarType type, ArrayRef<int32_t> sizes, size_t nbytes) const override;

 private:
  const ExternalData* const* files_;
  size_t count_;
};

}  // namespace ember
