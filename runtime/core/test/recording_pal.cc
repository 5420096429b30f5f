#include "runtime/core/test/recording_pal.h"

#include <stdlib.h>

#include "runtime/platform/platform.h"

namespace {
std::string& storage() {
  static std::string s;
  return s;
}
}  // namespace

namespace ember {
namespace testing {
const std::string& last_log() { return storage(); }
void clear_log() { storage().clear(); }
}  // namespace testing
}  // namespace ember

extern "C" {
void ember_pal_init(void) {}
void ember_pal_log(ember_log_level_t, const char*, int, const char* message, size_t length) {
  storage().assign(message, length);
}
uint64_t ember_pal_ticks_ns(void) { return 0; }
void ember_pal_abort(void) { abort(); }
}
