// What the server has done since it started, for GET /metrics in Prometheus' text format: requests by outcome,
// prompt and generated tokens, and how much of the prompts was served from kept state (a slot's previous
// conversation or the prefix cache) instead of being prefilled again.
#pragma once

#include <stddef.h>

#include <atomic>
#include <string>

namespace ember {
namespace llm {
namespace server {

struct Metrics {
  std::atomic<size_t> requests_finished{0};   // generated to their end (stop, length or a tool call)
  std::atomic<size_t> requests_cancelled{0};  // the client went away
  std::atomic<size_t> requests_failed{0};     // the program failed
  std::atomic<size_t> requests_refused{0};    // 429: slots and queue full
  std::atomic<size_t> prompt_tokens{0};
  std::atomic<size_t> cached_prompt_tokens{0};  // not prefilled: reused from a slot's session or the prefix cache
  std::atomic<size_t> completion_tokens{0};
  std::atomic<size_t> prefix_cache_hits{0};    // a system prompt found prefilled
  std::atomic<size_t> prefix_cache_misses{0};  // a system prompt prefilled and added
};

// The exposition text: every counter above, then the gauges given (slots generating, requests waiting).
std::string metrics_text(const Metrics& m, size_t slots, size_t busy, size_t waiting);

}  // namespace server
}  // namespace llm
}  // namespace ember
