#include "examples/llm/server/metrics.h"

namespace ember {
namespace llm {
namespace server {
namespace {

void add(std::string* out, const char* name, const char* type, const char* help, size_t value) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  *out += std::string(name) + " " + std::to_string(value) + "\n";
}

}  // namespace

std::string metrics_text(const Metrics& m, size_t slots, size_t busy, size_t waiting) {
  std::string out;
  out += "# HELP ember_requests_total Generation requests by outcome.\n# TYPE ember_requests_total counter\n";
  const std::pair<const char*, size_t> outcomes[] = {{"finished", m.requests_finished.load()},
                                                     {"cancelled", m.requests_cancelled.load()},
                                                     {"failed", m.requests_failed.load()},
                                                     {"refused", m.requests_refused.load()}};
  for (const auto& o : outcomes) {
    out += std::string("ember_requests_total{outcome=\"") + o.first + "\"} " + std::to_string(o.second) + "\n";
  }
  add(&out, "ember_prompt_tokens_total", "counter", "Prompt tokens of generation requests.", m.prompt_tokens.load());
  add(&out, "ember_prompt_tokens_cached_total", "counter",
      "Prompt tokens not prefilled: kept in a slot's session or the prefix cache.", m.cached_prompt_tokens.load());
  add(&out, "ember_completion_tokens_total", "counter", "Tokens generated.", m.completion_tokens.load());
  add(&out, "ember_prefix_cache_hits_total", "counter", "Requests whose system prompt was found prefilled.",
      m.prefix_cache_hits.load());
  add(&out, "ember_prefix_cache_misses_total", "counter", "Requests whose system prompt was prefilled and kept.",
      m.prefix_cache_misses.load());
  add(&out, "ember_slots", "gauge", "Requests that can generate at once.", slots);
  add(&out, "ember_slots_busy", "gauge", "Requests generating now.", busy);
  add(&out, "ember_requests_waiting", "gauge", "Requests waiting for a slot.", waiting);
  return out;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
