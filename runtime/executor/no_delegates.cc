// The delegate support of a build without backends (delegate_support.h): what the executor did before
// delegation existed, moved here so the executor's own code is the same one indirect call either way.
#include "runtime/core/log.h"
#include "runtime/executor/delegate_support.h"

namespace ember {

namespace {

Error refuse(DelegateLoad& load, size_t pc, const ember_pte::DelegateCall*, Method::Instruction*) {
  EMBER_LOG(ERROR, "method '%s' instruction %zu: delegate calls need a backend, and this build has none", load.method,
            pc);
  return Error::NotSupported;
}

Result<MethodMeta> plain_meta(const Program*, const ember_pte::ExecutionPlan* plan) { return MethodMeta::make(plan); }

}  // namespace

const DelegateSupport kNoDelegates = {&refuse, &plain_meta};

}  // namespace ember
