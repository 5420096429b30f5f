// The POSIX pool: every tile runs exactly once whatever the split, runs follow each other without losing a wake-up,
// work really lands on more than one thread, callers on several threads at once each get all of their own tiles,
// and bad sizes are refused by name.
#include "runtime/threads/posix_thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

TEST(PosixThreadPool, EveryItemOnceForAnySplit) {
  for (int threads : {1, 2, 3, 8}) {
    auto pool = PosixThreadPool::create(threads);
    ASSERT_TRUE(pool.ok());
    EXPECT_EQ(pool.get()->threads(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      for (int64_t tile : {1, 3, 64, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(pool.get(), n, tile, [&](int64_t b, int64_t e) {
          EXPECT_TRUE(0 <= b && b < e && e <= n && (e - b == tile || e == n)) << b << " " << e;
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << "/" << tile;
      }
    }
    PosixThreadPool::destroy(pool.get());
  }
}

// Many short runs back to back (a model's kernels): none hangs, none loses a tile.
TEST(PosixThreadPool, ManyRunsInARow) {
  auto pool = PosixThreadPool::create(4);
  ASSERT_TRUE(pool.ok());
  std::atomic<int64_t> sum{0};
  for (int r = 0; r < 20000; ++r) {
    parallel_for(pool.get(), 8, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
  }
  EXPECT_EQ(sum.load(), 20000 * 8);
  PosixThreadPool::destroy(pool.get());
}

// Tiles that wait for each other can only finish if they run at once: proof that the workers take tiles.
TEST(PosixThreadPool, TilesRunOnSeveralThreads) {
  auto pool = PosixThreadPool::create(2);
  ASSERT_TRUE(pool.ok());
  std::atomic<int> arrived{0};
  std::set<pthread_t> seen;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  parallel_for(pool.get(), 2, 1, [&](int64_t, int64_t) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) {
    }
    pthread_mutex_lock(&m);
    seen.insert(pthread_self());
    pthread_mutex_unlock(&m);
  });
  EXPECT_EQ(seen.size(), 2u);
  PosixThreadPool::destroy(pool.get());
}

// Methods executing at once on one pool (Python threads calling one program): each caller's every tile runs exactly
// once, with its own task and context, however the callers' runs interleave.
TEST(PosixThreadPool, ConcurrentCallersEachGetTheirOwnTiles) {
  auto pool = PosixThreadPool::create(3);
  ASSERT_TRUE(pool.ok());
  constexpr int kCallers = 4, kRuns = 20000;
  std::vector<int64_t> wrong(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      const int64_t n = 16 + c;  // a size of its own, so a caller running another's task would be seen
      for (int r = 0; r < kRuns; ++r) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(pool.get(), n, 2, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) wrong[static_cast<size_t>(c)] += hits[static_cast<size_t>(i)].load() != 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(wrong[static_cast<size_t>(c)], 0) << "caller " << c;
  PosixThreadPool::destroy(pool.get());
}

TEST(PosixThreadPool, NoPoolRunsOnTheCaller) {
  int64_t covered = 0;
  parallel_for(nullptr, 10, 4, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered, 10);
}

TEST(PosixThreadPool, BadSizesAreRefusedByName) {
  for (int threads : {0, -1, PosixThreadPool::kMaxThreads + 1}) {
    auto pool = PosixThreadPool::create(threads);
    EXPECT_EQ(pool.error(), Error::InvalidArgument);
    EXPECT_NE(testing::last_log().find("threads asked for; give 1 .. 64"), std::string::npos) << testing::last_log();
  }
}

}  // namespace
}  // namespace ember
