// Dynamic shapes (feature_support.h): a bounded input takes any shape of its rank within its planned sizes. Linked
// only by tables whose selection has the dynamic_shapes feature.
#include "runtime/core/log.h"
#include "runtime/executor/feature_support.h"

namespace ember {

namespace {

Error resize_bounded_input(const Method& method, size_t index, const Tensor& t, ArrayRef<int32_t> planned,
                           ArrayRef<int32_t> sizes) {
  size_t bad = sizes.size() == planned.size() ? sizes.size() : 0;
  for (size_t d = 0; bad == sizes.size() && d < sizes.size(); ++d) {
    if (sizes[d] < 0 || sizes[d] > planned[d]) bad = d;
  }
  if (bad != sizes.size() || sizes.size() != planned.size()) {
    char want[96], got[96];
    EMBER_LOG(ERROR, "method '%s' input %zu takes sizes up to %s; got %s", method.name(), index,
              shape_text(want, sizeof(want), planned), shape_text(got, sizeof(got), sizes));
    if (sizes.size() == planned.size()) {
      EMBER_LOG(ERROR, "method '%s' input %zu: dimension %zu is %d, beyond its bound %d", method.name(), index, bad,
                static_cast<int>(sizes[bad]), static_cast<int>(planned[bad]));
    }
    return Error::InvalidArgument;
  }
  return t.impl()->resize(sizes);
}

}  // namespace

const DynamicShapeSupport kDynamicShapeSupport = {&resize_bounded_input};

}  // namespace ember
