// How the executor runs delegate calls (runtime/backend/backend.h), reached only through delegate_support()
// (runtime/kernel/operator_registry.h): a generated table with backends returns &kDelegateSupport, every other
// table null, so a binary whose programs use no delegate links none of this (the verifier of delegate fields,
// blob loading, the backends). Internal to runtime/executor and the generated tables.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"

namespace ember_pte {
struct ExecutionPlan;
struct DelegateCall;
}  // namespace ember_pte

namespace ember {

class Program;
struct DelegateRecord;

// What the method keeps for its delegates: one record per delegate of the plan, initialized on the first call
// that uses it. Lives in the method allocator; `destroy` runs each backend's destroy when the method dies.
struct DelegateState {
  void (*destroy)(DelegateState* state);
  DelegateRecord* records;
  size_t count;
};

// Method::load's own context (its loader keeps exactly this), so a delegate call costs the executor one pointer.
struct DelegateLoad {
  const Program* program;
  const ember_pte::ExecutionPlan* plan;
  MemoryManager* memory;  // delegates take what they keep from memory->method_allocator
  const char* method;
  EValue* values;         // the method's values, loaded
  DelegateState* state;   // made on the first delegate call; the method destroys it
};

// delegate_support() is never null: a table without backends returns &kNoDelegates, whose load_call refuses
// the call by name and whose method_meta adds nothing. Either way the executor's part is one indirect call.
struct DelegateSupport {
  // Checks delegate call `call` (instruction `pc`) and the delegate it names (every field: a .pte is hostile),
  // loads the delegate's blob, resolves its backend and runs its init (once per delegate), and writes into
  // `out` the instruction that runs it.
  Error (*load_call)(DelegateLoad& load, size_t pc, const ember_pte::DelegateCall* call, Method::Instruction* out);
  // MethodMeta for `plan`, its method_allocator_bytes() including what load_call takes over the whole method:
  // records, argument lists and each backend's state (its init_bytes over its blob). A backend that cannot say
  // is logged, by name and delegate, with its reason, and counted as 0.
  Result<MethodMeta> (*method_meta)(const Program* program, const ember_pte::ExecutionPlan* plan);
};

extern const DelegateSupport kDelegateSupport;
extern const DelegateSupport kNoDelegates;

}  // namespace ember
