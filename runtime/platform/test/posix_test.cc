#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "runtime/platform/platform.h"

namespace {

// Runs `fn` with stderr sent to a file and returns what it wrote.
template <typename Fn>
std::string capture_stderr(Fn fn) {
  const char* dir = getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/stderr.txt";
  fflush(stderr);
  const int saved = dup(2);
  FILE* file = fopen(path.c_str(), "w+");
  dup2(fileno(file), 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  rewind(file);
  for (int c; (c = fgetc(file)) != EOF;) text.push_back(static_cast<char>(c));
  fclose(file);
  return text;
}

TEST(PosixPal, LogsOneLineWithLevelFileBaseNameAndLine) {
  ember_pal_init();
  // The length bounds the message: bytes past it (here " world") are not printed.
  const std::string out =
      capture_stderr([] { ember_pal_log(EMBER_LOG_ERROR, "runtime/executor/method.cc", 42, "hello world", 5); });
  EXPECT_EQ(out, "E ember method.cc:42] hello\n");
  EXPECT_EQ(capture_stderr([] { ember_pal_log(EMBER_LOG_INFO, "x.cc", 1, "ok", 2); }), "I ember x.cc:1] ok\n");
}

TEST(PosixPal, TicksAreMonotonicNanoseconds) {
  const uint64_t before = ember_pal_ticks_ns();
  const struct timespec pause = {0, 2000000};  // 2 ms
  nanosleep(&pause, nullptr);
  const uint64_t after = ember_pal_ticks_ns();
  EXPECT_GE(after - before, 2000000u);
  EXPECT_LT(after - before, 2000000000u);  // nanoseconds, not a coarser or finer unit by mistake
}

}  // namespace
