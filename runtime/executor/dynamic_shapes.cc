// Dynamic shapes (feature_support.h): a bounded input takes any shape of its rank within its planned sizes. Linked
// only by tables whose selection has the dynamic_shapes feature.
#include "runtime/core/log.h"
#include "runtime/executor/feature_support.h"

namespace ember {

namespace {

// Each dimension on its own against its bound, not the element count: [4, 1] fits the bytes of a [2, 2] bound but
// would have kernels index past the second dimension's planned extent. One line per refusal, naming the dimension
// (the Python extension raises with the last line logged). The .pte keeps only upper bounds: an export's lower
// bound is not in the file, so any size from 0 up is taken.
Error resize_bounded_input(const Method& method, size_t index, const Tensor& t, ArrayRef<int32_t> planned,
                           ArrayRef<int32_t> sizes) {
  char want[96], got[96];
  if (sizes.size() != planned.size()) {
    EMBER_LOG(ERROR, "method '%s' input %zu takes sizes up to %s; got %s: rank %zu, the program's is %zu",
              method.name(), index, shape_text(want, sizeof(want), planned), shape_text(got, sizeof(got), sizes),
              sizes.size(), planned.size());
    return Error::InvalidArgument;
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) {
      EMBER_LOG(ERROR, "method '%s' input %zu: dimension %zu is %d; a size is never negative (got %s)", method.name(),
                index, d, static_cast<int>(sizes[d]), shape_text(got, sizeof(got), sizes));
      return Error::InvalidArgument;
    }
    if (sizes[d] > planned[d]) {
      EMBER_LOG(ERROR, "method '%s' input %zu: dimension %zu is %d, beyond its bound %d (sizes up to %s; got %s)",
                method.name(), index, d, static_cast<int>(sizes[d]), static_cast<int>(planned[d]),
                shape_text(want, sizeof(want), planned), shape_text(got, sizeof(got), sizes));
      return Error::InvalidArgument;
    }
  }
  return t.impl()->resize(sizes);
}

}  // namespace

const DynamicShapeSupport kDynamicShapeSupport = {&resize_bounded_input};

}  // namespace ember
