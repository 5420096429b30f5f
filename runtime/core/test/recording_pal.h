// A PAL for tests: keeps the last log line so a test can check what an error said.
#pragma once

#include <string>

namespace ember {
namespace testing {
const std::string& last_log();
void clear_log();
}  // namespace testing
}  // namespace ember
