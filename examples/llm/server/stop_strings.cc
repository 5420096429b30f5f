#include "examples/llm/server/stop_strings.h"

namespace ember {
namespace llm {
namespace server {

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return std::string();
  held_.append(text.data(), text.size());
  // The earliest complete stop sequence wins (two may end in the same token).
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at < first) first = at;
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  const size_t keep = partial_match_length();
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

size_t StopStrings::partial_match_length() const {
  size_t longest = 0;
  for (const std::string& stop : stops_) {
    // Ends of held_ shorter than the whole stop sequence (a whole one was found above).
    const size_t most = stop.size() - 1 < held_.size() ? stop.size() - 1 : held_.size();
    for (size_t n = most; n > longest; --n) {
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

std::string StopStrings::finish() {
  std::string out = stopped_ ? std::string() : held_;
  held_.clear();
  return out;
}

}  // namespace server
}  // namespace llm
}  // namespace ember
