// A request's stop sequences over streamed text: generation ends where one first appears, and the answer stops
// before it. Text is only released once no stop sequence can still start inside it, so a stream never sends the
// first half of a stop sequence that the next token completes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace llm {
namespace server {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds `text` (whole UTF-8 characters) and returns what can be sent now. After a stop sequence is found,
  // stopped() is true and the returned text ends where it began.
  std::string push(std::string_view text);
  bool stopped() const { return stopped_; }
  // The text held back at the end of generation (it turned out not to start a stop sequence).
  std::string finish();

 private:
  // The length of the longest end of held_ that is the beginning of some stop sequence.
  size_t partial_match_length() const;
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace server
}  // namespace llm
}  // namespace ember
