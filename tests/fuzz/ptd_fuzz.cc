// Fuzz target: a .ptd (external data file, runtime/data_file) read from hostile bytes. FlatTensorFile::load from a
// buffer of exactly the input's size; when it accepts the file, every entry is looked up by name, its bytes read
// whole (so a range past the buffer is an AddressSanitizer report), and asked for as tensors of a few types and
// shapes, as methods would. Every answer must be a value or an error, never a crash.
#include <stdlib.h>
#include <string.h>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/data_file/flat_tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  // A file read into memory is aligned; fuzzer bytes are not: copy them as a loader would, at the exact size.
  uint8_t* copy = static_cast<uint8_t*>(aligned_alloc(64, size == 0 ? 64 : (size + 63) / 64 * 64));
  if (size) memcpy(copy, data, size);
  BufferDataLoader loader(copy, size);
  Result<FlatTensorFile> file = FlatTensorFile::load(&loader);
  if (file.ok()) {
    uint32_t sum = 0;
    const int32_t shapes[][2] = {{1, 1}, {3, 4}, {4, 3}};
    for (size_t i = 0; i < file->num_entries(); ++i) {
      Result<const char*> key = file->key(i);
      if (!key.ok()) abort();  // every index below num_entries() names an entry
      Result<ArrayRef<uint8_t>> bytes = file->find(key.get());
      if (!bytes.ok()) abort();  // and every name is found
      for (size_t b = 0; b < bytes->size(); ++b) sum += bytes.get()[b];
      for (ScalarType type : {ScalarType::Float, ScalarType::Long, ScalarType::Byte}) {
        for (const auto& s : shapes) {
          const size_t nbytes = static_cast<size_t>(s[0] * s[1]) * element_size(type);
          Result<const void*> t = file->tensor(key.get(), type, ArrayRef<int32_t>(s, 2), nbytes);
          if (t.ok()) sum += static_cast<const uint8_t*>(t.get())[nbytes - 1];
        }
      }
    }
    (void)file->key(file->num_entries());  // one past the end: an error
    volatile uint32_t keep = sum;
    (void)keep;
  }
  free(copy);
  return 0;
}
