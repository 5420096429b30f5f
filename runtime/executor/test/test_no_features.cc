// No optional executor feature, as a table generated from a selection whose programs use none (feature_support.h):
// programs that need one must be refused at load, by name.
#include "runtime/executor/feature_support.h"
#include "runtime/kernel/operator_registry.h"

namespace ember {
namespace {
constexpr FeatureSupport kNone = {nullptr, nullptr, false, nullptr};
}  // namespace
const FeatureSupport* feature_support() { return &kNone; }
}  // namespace ember
