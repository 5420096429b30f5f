// A table without backends, as the default generated one: delegate calls are refused at load.
#include "runtime/backend/backend.h"
#include "runtime/executor/delegate_support.h"
#include "runtime/kernel/operator_registry.h"

namespace ember {
const DelegateSupport* delegate_support() { return &kNoDelegates; }
Span<const Backend* const> registered_backends() { return {}; }
}  // namespace ember
