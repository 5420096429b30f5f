// Admission for generation: at most `slots` requests generate at once (each slot owns a loaded program's
// activations and KV cache), up to `queue` more wait for a slot in arrival order, and a request beyond those is
// turned away at once (the server answers 429) instead of waiting without bound.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <condition_variable>
#include <mutex>
#include <vector>

namespace ember {
namespace llm {
namespace server {

class SlotPool {
 public:
  SlotPool(size_t slots, size_t queue);

  // The slot a request may use, released when the lease goes out of scope.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept : pool_(other.pool_), slot_(other.slot_) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    bool ok() const { return pool_ != nullptr; }
    size_t slot() const { return slot_; }

   private:
    friend class SlotPool;
    Lease(SlotPool* pool, size_t slot) : pool_(pool), slot_(slot) {}
    SlotPool* pool_ = nullptr;
    size_t slot_ = 0;
  };

  // A free slot, after waiting behind the requests that came first; a lease that is not ok() when the queue is
  // already full.
  Lease acquire();

  size_t slots() const { return free_.size() + busy_; }
  size_t waiting() const;
  size_t busy() const;

 private:
  void release(size_t slot);
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;
  size_t busy_ = 0;
  size_t queue_;
  // Tickets keep arrival order: a waiter goes when its ticket is served and a slot is free.
  uint64_t next_ticket_ = 0;
  uint64_t serving_ = 0;
};

}  // namespace server
}  // namespace llm
}  // namespace ember
