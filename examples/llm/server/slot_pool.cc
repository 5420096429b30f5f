#include "examples/llm/server/slot_pool.h"

namespace ember {
namespace llm {
namespace server {

SlotPool::SlotPool(size_t slots, size_t queue) : queue_(queue) {
  for (size_t i = slots; i > 0; --i) free_.push_back(i - 1);  // slot 0 handed out first
}

SlotPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->release(slot_);
}

size_t SlotPool::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_;
}

size_t SlotPool::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<size_t>(next_ticket_ - serving_);
}

SlotPool::Lease SlotPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  const size_t ahead = static_cast<size_t>(next_ticket_ - serving_);
  // Those ahead hold tickets: while any waits, a newcomer queues behind them even if a slot just freed.
  if (ahead >= free_.size() + queue_) return Lease();
  const uint64_t ticket = next_ticket_++;
  freed_.wait(lock, [&] { return ticket == serving_ && !free_.empty(); });
  ++serving_;
  const size_t slot = free_.back();
  free_.pop_back();
  ++busy_;
  lock.unlock();
  freed_.notify_all();  // the next ticket may find another free slot
  return Lease(this, slot);
}

void SlotPool::release(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
    --busy_;
  }
  freed_.notify_all();
}

}  // namespace server
}  // namespace llm
}  // namespace ember
