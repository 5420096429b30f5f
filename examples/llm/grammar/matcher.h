// Runs a byte-level Grammar over text as it is generated: a set of parse stacks (a pushdown automaton that keeps
// every parse alive, so ambiguity needs no backtracking), advanced one byte at a time.
//
// A stack is a chain of nodes, each a position in Grammar::elements: the top is the byte set to match next, the
// nodes under it are where to return when a rule ends. Nodes live in one arena and are shared between stacks (a
// rule's alternatives all point at the same return node), so a state is just the list of its top nodes. Pushing
// a rule whose reference is the last element of its alternative returns straight to the caller's parent (a tail
// call), so right recursion such as `item*` does not deepen the stack.
//
// Bounds, so no grammar can make a step loop or grow without limit: left recursion is refused when the grammar is
// built (grammar.h); a stack deeper than kMaxStackDepth, a state of more than kMaxStacks stacks or a step that
// expands more than kMaxStepWork nodes fails the byte (overflowed() says so).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string_view>
#include <vector>

#include "examples/llm/grammar/grammar.h"

namespace ember {
namespace llm {

constexpr int32_t kMaxStackDepth = 2048;
constexpr size_t kMaxStacks = 4096;
constexpr size_t kMaxStepWork = 1 << 20;

class GrammarMatcher {
 public:
  // `grammar` must outlive the matcher.
  explicit GrammarMatcher(const Grammar& grammar);

  // Feeds `bytes` as one unit (a token's). False, with the state unchanged, when the grammar does not allow them.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last `n` accepted units (at most history()).
  void rollback(size_t n);
  size_t history() const { return states_.size() - 1; }
  // The text so far is a complete sentence of the grammar (an end-of-sequence token may come now).
  bool can_end() const { return states_.back().accepting; }
  // No byte can follow (only the end may come).
  bool finished() const { return states_.back().tops.empty(); }
  // A step was refused because it passed a bound (hostile or too ambiguous grammar), not because of the text.
  bool overflowed() const { return overflowed_; }

  // Low-level stepping, for the token masker (token_mask.h).
  struct Node {
    int32_t pos;     // index into Grammar::elements
    int32_t parent;  // node to return to, -1 at the bottom
    int32_t depth;   // nodes below this one
  };
  const Node& node(int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& tops() const { return states_.back().tops; }
  size_t num_nodes() const { return nodes_.size(); }
  // Drops nodes made after `mark` (= num_nodes() then) that no state holds.
  void truncate_nodes(size_t mark);
  // Advances the stacks `from[0..n)` by byte b into `to` (cleared first); `*accepting` says whether a stack
  // ended the start rule. Pops into nodes below `mark` lower `*min_depth` to their depth (-1: the bottom was
  // reached): what a result depends on. With `exited` (local mode), a stack that would pop into a node below
  // `mark` whose depth is under `exit_depth` (or end the start rule) stops there instead and sets *exited: the
  // step then reads no node shallower than exit_depth. False when a bound was passed.
  bool step(const int32_t* from, size_t n, uint8_t b, int32_t mark, std::vector<int32_t>* to, bool* accepting,
            int32_t* min_depth, bool* exited = nullptr, int32_t exit_depth = 0);

 private:
  struct State {
    std::vector<int32_t> tops;
    bool accepting;
    size_t node_mark;
  };
  int32_t new_node(int32_t pos, int32_t parent);
  void drop_nodes_from(size_t mark);
  // Expands `work_` (node ids) until every stack's top is a byte set; adds those tops to `to`.
  bool close(int32_t mark, std::vector<int32_t>* to, bool* accepting, int32_t* min_depth, bool* exited,
             int32_t exit_depth);

  const Grammar& g_;
  std::vector<Node> nodes_;
  // (pos, parent) -> node: equal stacks are one node, so ambiguity cannot multiply them. Open addressing with
  // linear probing (a node is made for nearly every byte a mask walk steps, so this is the hot lookup).
  struct InternTable {
    std::vector<uint64_t> keys;  // kEmpty where free
    std::vector<int32_t> values;
    size_t used = 0;
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    // Every bit of the key mixed into the low bits the table uses (a plain multiply leaves a position's high bits
    // out, so a large grammar's positions piled into a few probe runs; grammar_fuzz found it).
    static size_t hash(uint64_t k) {
      k ^= k >> 33;
      k *= 0xff51afd7ed558ccdull;
      k ^= k >> 33;
      k *= 0xc4ceb9fe1a85ec53ull;
      return static_cast<size_t>(k ^ (k >> 33));
    }
    int32_t* find(uint64_t k);
    void insert(uint64_t k, int32_t v);
    void erase(uint64_t k);
  };
  InternTable intern_;
  std::vector<State> states_;
  std::vector<uint32_t> seen_;  // per node: the step (epoch_) that last expanded it
  uint32_t epoch_ = 0;
  std::vector<int32_t> work_;
  std::vector<int32_t> scratch_;
  bool overflowed_ = false;
};

}  // namespace llm
}  // namespace ember
