#pragma once

#include <stdint.h>

#include <vector>

#include "runtime/executor/memory_manager.h"

namespace ember {
namespace bundled {

// The executor tests' program: out = x + w, x an input and w = [1, 2, 3, 4], both Float [2, 2].
std::vector<uint8_t> base_pte();
// Memory for one load_method of it, valid until the next call.
MemoryManager* fresh_test_memory();

}  // namespace bundled
}  // namespace ember
