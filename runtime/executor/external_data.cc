// External constants (feature_support.h): a tensor whose Tensor says location EXTERNAL is found by its fully
// qualified name in the data files the method was loaded with. Linked only into builds whose selection has the
// external_data feature (codegen/features.py), so other runners carry none of it.
#include "runtime/core/log.h"
#include "runtime/executor/feature_support.h"
#include "runtime/executor/plan_access.h"

namespace ember {
namespace {

Result<const void*> resolve_external(const char* method, size_t index, const ember_pte::Tensor* t,
                                     const TensorImpl& impl, const ExternalData* data) {
  const auto* fqn = t->extra_tensor_info()->fully_qualified_name();
  EMBER_CHECK_OR_RETURN_ERROR(fqn != nullptr && fqn->size() > 0, InvalidProgram,
                              "method '%s': value %zu is external (in a .ptd) but has no name to find it by", method,
                              index);
  const char* name = fqn->c_str();
  // ExecuTorch's external mutable weights (training) would need a copy into planned memory: not supported.
  EMBER_CHECK_OR_RETURN_ERROR(t->allocation_info() == nullptr, NotSupported,
                              "method '%s': value %zu ('%s') is a planned tensor initialized from external data; only "
                              "constants may be external",
                              method, index, name);
  EMBER_CHECK_OR_RETURN_ERROR(data != nullptr, NotFound,
                              "method '%s': value %zu ('%s') is kept in an external data file (.ptd), and the method "
                              "was loaded without one",
                              method, index, name);
  Result<const void*> bytes = data->tensor(name, impl.scalar_type(), impl.sizes(), impl.nbytes());
  // A mismatch was logged where it was found, naming the tensor and what differs.
  if (!bytes.ok() && bytes.error() == Error::NotFound) {
    EMBER_LOG(ERROR, "method '%s': value %zu ('%s') is in none of the external data files given", method, index, name);
  }
  return bytes;
}

}  // namespace

const ExternalDataSupport kExternalDataSupport = {&resolve_external};

}  // namespace ember
