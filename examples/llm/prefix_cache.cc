#include "examples/llm/prefix_cache.h"

#include <algorithm>
#include <utility>

#include "examples/llm/decoder_program.h"
#include "runtime/core/log.h"

namespace ember {
namespace llm {

Error PrefixCache::add(const int64_t* prefix, size_t n) {
  EMBER_CHECK_OR_RETURN_ERROR(max_entries_ > 0, InvalidArgument, "the prefix cache holds 0 entries");
  Result<std::unique_ptr<Session>> s = program_->new_session();
  if (!s.ok()) return s.error();
  Result<const float*> logits = (*s)->append(prefix, n);
  if (!logits.ok()) return logits.error();
  const size_t vocab = static_cast<size_t>(program_->metadata().vocab_size);
  Entry e{std::move(s.get()), std::vector<float>(logits.get(), logits.get() + vocab), ++clock_};
  for (Entry& old : entries_) {
    if (old.session->tokens() == e.session->tokens()) {
      old = std::move(e);
      return Error::Ok;
    }
  }
  if (entries_.size() == max_entries_) {
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    entries_.erase(lru);
  }
  entries_.push_back(std::move(e));
  return Error::Ok;
}

Result<std::unique_ptr<Session>> PrefixCache::start(const int64_t* prompt, size_t n, const float** logits,
                                                    size_t* reused, const SessionOptions& options) {
  EMBER_CHECK_OR_RETURN_ERROR(n > 0, InvalidArgument, "a session needs at least one prompt token");
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    const std::vector<int64_t>& t = e.session->tokens();
    if (t.size() <= n && (best == nullptr || t.size() > best->session->tokens().size()) &&
        std::equal(t.begin(), t.end(), prompt)) {
      best = &e;
    }
  }
  *reused = 0;
  if (best == nullptr) {
    Result<std::unique_ptr<Session>> s = program_->new_session(options);
    if (!s.ok()) return s.error();
    Result<const float*> l = (*s)->append(prompt, n);
    if (!l.ok()) return l.error();
    *logits = l.get();
    return s;
  }
  best->last_use = ++clock_;
  Result<std::unique_ptr<Session>> s = best->session->fork();
  if (!s.ok()) return s.error();
  (*s)->options_ = options;
  const size_t have = best->session->tokens().size();
  *reused = have;
  if (have == n) {
    *logits = best->logits.data();
    return s;
  }
  Result<const float*> l = (*s)->append(prompt + have, n - have);
  if (!l.ok()) return l.error();
  *logits = l.get();
  return s;
}

size_t PrefixCache::bytes() const {
  size_t b = 0;
  for (const Entry& e : entries_) {
    b += e.session->state_bytes() + e.session->tokens().size() * sizeof(int64_t) + e.logits.size() * sizeof(float);
  }
  return b;
}

}  // namespace llm
}  // namespace ember
