#include "runtime/backend/backend.h"

#include <string.h>

namespace ember {

const Backend* find_backend(const char* id) {
  // A handful of entries at most: a linear scan is smaller than a binary search and as fast.
  for (const Backend* b : registered_backends()) {
    if (strcmp(b->id, id) == 0) return b;
  }
  return nullptr;
}

}  // namespace ember
