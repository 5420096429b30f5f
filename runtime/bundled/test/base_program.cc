// The executor tests' hand-made program and memory, through a header of its own: test_program.h brings the
// object API's copy of scalar_type.fbs, whose include guard is the runtime's, so it cannot share a translation
// unit with schema/bundled_program_generated.h.
#include "runtime/bundled/test/base_program.h"

#include <memory>

#include "runtime/executor/test/test_program.h"

namespace ember {
namespace bundled {

std::vector<uint8_t> base_pte() { return testing::serialize(*testing::base_program()); }

MemoryManager* fresh_test_memory() {
  static std::unique_ptr<testing::TestMemory> memory;
  memory.reset(new testing::TestMemory());
  return &memory->manager;
}

}  // namespace bundled
}  // namespace ember
