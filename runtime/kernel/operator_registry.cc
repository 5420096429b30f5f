#include "runtime/kernel/operator_registry.h"

#include <string.h>

namespace ember {

namespace {
// Compares "op.overload" (or "op" when overload is empty) with a table name, without building the string.
int compare(const char* op, const char* overload, const char* name) {
  const size_t op_len = strlen(op);
  int c = strncmp(op, name, op_len);
  if (c != 0) return c;
  const char* rest = name + op_len;
  if (overload[0] == '\0') return rest[0] == '\0' ? 0 : -1;
  if (rest[0] != '.') return rest[0] == '\0' ? 1 : ('.' < rest[0] ? -1 : 1);
  return strcmp(overload, rest + 1);
}
}  // namespace

const KernelEntry* find_kernel(const char* op, const char* overload) {
  Span<const KernelEntry> table = registered_kernels();
  size_t lo = 0, hi = table.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = compare(op, overload, table[mid].name);
    if (c == 0) return &table[mid];
    if (c < 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return nullptr;
}

}  // namespace ember
