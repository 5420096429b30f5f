// Every optional executor feature, as a table generated without a selection has them (feature_support.h).
#include "runtime/executor/feature_support.h"
#include "runtime/kernel/operator_registry.h"

namespace ember {
namespace {
constexpr FeatureSupport kAll = {&kControlFlowSupport, &kDynamicShapeSupport, true, &kExternalDataSupport};
}  // namespace
const FeatureSupport* feature_support() { return &kAll; }
}  // namespace ember
