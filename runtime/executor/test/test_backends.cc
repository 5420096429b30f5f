#include "runtime/executor/test/test_backends.h"

#include <string.h>

#include "backends/ember_portable/runtime/ember_portable.h"
#include "runtime/core/log.h"
#include "runtime/executor/delegate_support.h"
#include "runtime/kernel/operator_registry.h"

namespace ember {
namespace testing {

TestOffsetCounters& test_offset_counters() {
  static TestOffsetCounters c;
  return c;
}

std::vector<uint8_t> offset_blob(float c, bool fail_at_execute) {
  std::vector<uint8_t> b = {'O', 'F', 'S', '1', 0, 0, 0, 0};
  memcpy(b.data() + 4, &c, 4);
  if (fail_at_execute) b.push_back(1);
  return b;
}

namespace {

struct OffsetState {
  float c;
  bool fail;
};

Result<void*> init(BackendInitContext& ctx, const FreeableBuffer& processed, ArrayRef<CompileSpec> specs) {
  const uint8_t* b = static_cast<const uint8_t*>(processed.data());
  EMBER_CHECK_OR_RETURN_ERROR(processed.size() >= 8 && memcmp(b, "OFS1", 4) == 0, DelegateInvalidCompatibility,
                              "TestOffset: a %zu-byte blob without the OFS1 magic", processed.size());
  OffsetState* s = static_cast<OffsetState*>(ctx.allocator->allocate(kTestOffsetStateBytes, 16));
  EMBER_CHECK_OR_RETURN_ERROR(s != nullptr, MemoryAllocationFailed, "TestOffset: no room for its state");
  memcpy(&s->c, b + 4, 4);
  s->fail = processed.size() > 8 && b[8] == 1;
  TestOffsetCounters& c = test_offset_counters();
  ++c.inits;
  c.last_specs = specs.size();
  c.allocator_bytes = ctx.allocator->used_bytes();
  return static_cast<void*>(s);
}

Error execute(void* handle, EValue** args, size_t n) {
  const OffsetState* s = static_cast<const OffsetState*>(handle);
  EMBER_CHECK_OR_RETURN_ERROR(!s->fail, InvalidState, "TestOffset: told to fail");
  EMBER_CHECK_OR_RETURN_ERROR(n == 2 && args[0]->is_tensor() && args[1]->is_tensor(), InvalidProgram,
                              "TestOffset: takes two tensors, got %zu values", n);
  const Tensor& in = args[0]->as_tensor();
  const Tensor& out = args[1]->as_tensor();
  EMBER_CHECK_OR_RETURN_ERROR(in.numel() == out.numel() && in.scalar_type() == ScalarType::Float &&
                                  out.scalar_type() == ScalarType::Float,
                              InvalidProgram, "TestOffset: Float tensors of one size only");
  for (int64_t i = 0; i < in.numel(); ++i) out.mutable_data_ptr<float>()[i] = in.const_data_ptr<float>()[i] + s->c;
  return Error::Ok;
}

void destroy(void*) { ++test_offset_counters().destroys; }

Result<size_t> init_bytes(const void*, size_t, ArrayRef<CompileSpec>) { return kTestOffsetStateBytes; }

bool available() { return true; }

const Backend kTestOffset = {"TestOffset", &available, &init, &execute, &destroy, &init_bytes, false};

// As a generated table: sorted by id.
constexpr const Backend* kBackends[] = {&ember_portable::kBackend, &kTestOffset};

}  // namespace
}  // namespace testing

Span<const Backend* const> registered_backends() { return {testing::kBackends, 2}; }
const DelegateSupport* delegate_support() { return &kDelegateSupport; }

}  // namespace ember
