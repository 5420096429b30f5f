#include "runtime/core/scalar_type.h"

namespace ember {

size_t element_size(ScalarType t) {
  const int i = static_cast<int>(t);
  return is_valid_scalar_type(i) ? kScalarTypeInfo[i].element_size : 0;
}

const char* scalar_type_name(ScalarType t) {
  const int i = static_cast<int>(t);
  return is_valid_scalar_type(i) ? kScalarTypeInfo[i].name : "Unknown";
}

}  // namespace ember
