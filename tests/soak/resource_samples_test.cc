// The soak's checks catch what they are for: a descriptor, heap blocks or resident pages kept a step.
#include "tests/soak/resource_samples.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace ember {
namespace soak {
namespace {

constexpr uint64_t kSteps = 400, kEvery = 10;

// Runs `step` kSteps times, sampling every kEvery; returns the step the series first failed at (0: never).
template <typename Step>
uint64_t first_failure(SampleSeries* series, Step step) {
  for (uint64_t i = 1; i <= kSteps; ++i) {
    step();
    if (i % kEvery == 0 && !series->take(i)) return i;
  }
  return 0;
}

TEST(ResourceSamples, FlatRunPasses) {
  SampleSeries series("flat", kSteps / 10, kSteps / kEvery + 2);
  std::vector<uint8_t> scratch;
  EXPECT_EQ(first_failure(&series, [&] { scratch.assign(4096, 1); }), 0u) << series.error();
  EXPECT_TRUE(series.finish(kSteps, 1.0)) << series.error();
}

TEST(ResourceSamples, CatchesADescriptorKeptAStep) {
  SampleSeries series("fd leak", kSteps / 10, kSteps / kEvery + 2);
  std::vector<int> kept;
  kept.reserve(kSteps);
  const uint64_t failed = first_failure(&series, [&] { kept.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC)); });
  for (int fd : kept) close(fd);
  // The first sample after the baseline's.
  EXPECT_EQ(failed, kSteps / 10 + kEvery);
  EXPECT_NE(strstr(series.error().c_str(), "open file descriptors"), nullptr) << series.error();
}

TEST(ResourceSamples, CatchesTheSmallestHeapBlockKeptAStep) {
  if (sanitizer_heap()) GTEST_SKIP() << "the sanitizer's heap is LeakSanitizer's to check";
  SampleSeries series("heap leak", kSteps / 10, kSteps / kEvery + 2);
  std::vector<void*> kept;
  kept.reserve(kSteps);
  const uint64_t failed = first_failure(&series, [&] { kept.push_back(malloc(1)); });
  for (void* p : kept) free(p);
  // 32-byte chunks: 4 KiB of tolerance lasts 128 steps, so the failure comes at the first sample past that.
  EXPECT_GT(failed, kSteps / 10 + 4096 / 32);
  EXPECT_LE(failed, kSteps / 10 + 4096 / 32 + kEvery);
  EXPECT_NE(strstr(series.error().c_str(), "heap bytes in use"), nullptr) << series.error();
}

TEST(ResourceSamples, CatchesResidentPagesKeptAStep) {
  if (sanitizer_heap()) GTEST_SKIP() << "resident memory is not checked under a sanitizer's allocator";
  SampleSeries series("rss leak", kSteps / 10, kSteps / kEvery + 2);
  std::vector<void*> kept;
  kept.reserve(kSteps);
  // A page mapped and touched a step, outside the heap (as a leaked mapping would be).
  const uint64_t failed = first_failure(&series, [&] {
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(page, 1, 4096);
    kept.push_back(page);
  });
  for (void* p : kept) munmap(p, 4096);
  EXPECT_NE(failed, 0u);
  EXPECT_NE(strstr(series.error().c_str(), "resident bytes"), nullptr) << series.error();
}

TEST(ResourceSamples, AShortRunIsNotAPass) {
  SampleSeries series("short", kSteps, 4);
  EXPECT_FALSE(series.finish(kSteps / 2, 1.0));
  EXPECT_NE(strstr(series.error().c_str(), "before its warm-up"), nullptr) << series.error();
}

}  // namespace
}  // namespace soak
}  // namespace ember
