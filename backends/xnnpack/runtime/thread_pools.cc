#include "backends/xnnpack/runtime/thread_pools.h"

#include <pthread.h>
#include <pthreadpool.h>

namespace ember {
namespace xnnpack {
namespace {

struct Shared {
  int threads;
  pthreadpool_t pool;
  int users;
};

// Few thread counts are ever in use at once (a process loads its methods with one or two); past the table's room a
// pool is private to its delegate.
constexpr int kSlots = 8;
Shared g_pools[kSlots];
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

}  // namespace

void* acquire_threadpool(int threads) {
  pthread_mutex_lock(&g_mutex);
  Shared* free_slot = nullptr;
  for (Shared& s : g_pools) {
    if (s.users > 0 && s.threads == threads) {
      ++s.users;
      pthread_mutex_unlock(&g_mutex);
      return s.pool;
    }
    if (s.users == 0 && free_slot == nullptr) free_slot = &s;
  }
  pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(threads));
  if (pool != nullptr && free_slot != nullptr) *free_slot = Shared{threads, pool, 1};
  pthread_mutex_unlock(&g_mutex);
  return pool;
}

void release_threadpool(void* pool) {
  if (pool == nullptr) return;
  pthread_mutex_lock(&g_mutex);
  for (Shared& s : g_pools) {
    if (s.users > 0 && s.pool == pool) {
      if (--s.users == 0) {
        pthreadpool_destroy(s.pool);
        s = Shared{0, nullptr, 0};
      }
      pthread_mutex_unlock(&g_mutex);
      return;
    }
  }
  pthread_mutex_unlock(&g_mutex);
  pthreadpool_destroy(static_cast<pthreadpool_t>(pool));  // a private one
}

}  // namespace xnnpack
}  // namespace ember
