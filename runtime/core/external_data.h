// Tensors a program keeps outside itself (program-data separation): a constant whose Tensor says location
// EXTERNAL carries only a name (extra_tensor_info.fully_qualified_name), and the method finds its bytes here when it
// loads. runtime/data_file's FlatTensorFile reads them from a .ptd; several programs may share one, so their weights
// are mapped once.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember {

// Owned by the application and borrowed by the methods that load with it (it must outlive them); as DataLoader,
// its destructor is protected and not virtual, so bare-metal builds need no operator delete.
class ExternalData {
 public:
  // The bytes of tensor `name`, which the program describes as `type` with `sizes` (`nbytes` in all): NotFound
  // when this data has no such name (the caller may try other data), InvalidExternalData when it has one but of
  // another type or shape, or too few bytes. Logs the name at fault.
  virtual Result<const void*> tensor(const char* name, ScalarType type, ArrayRef<int32_t> sizes,
                                     size_t nbytes) const = 0;

 protected:
  ExternalData() = default;
  ExternalData(const ExternalData&) = default;
  ExternalData& operator=(const ExternalData&) = default;
  ~ExternalData() = default;
};

}  // namespace ember
