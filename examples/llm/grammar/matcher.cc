#include "examples/llm/grammar/matcher.h"

#include <algorithm>

namespace ember {
namespace llm {

GrammarMatcher::GrammarMatcher(const Grammar& grammar) : g_(grammar) {
  State s;
  s.accepting = false;
  ++epoch_;
  int32_t min_depth = INT32_MAX;
  for (uint32_t alt : g_.rules[g_.root].alternatives) work_.push_back(new_node(static_cast<int32_t>(alt), -1));
  if (!close(0, &s.tops, &s.accepting, &min_depth, nullptr, 0)) overflowed_ = true;
  s.node_mark = nodes_.size();
  states_.push_back(std::move(s));
}

int32_t* GrammarMatcher::InternTable::find(uint64_t k) {
  if (keys.empty()) return nullptr;
  const size_t mask = keys.size() - 1;
  for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
    if (keys[i] == k) return &values[i];
    if (keys[i] == kEmpty) return nullptr;
  }
}

void GrammarMatcher::InternTable::insert(uint64_t k, int32_t v) {
  if ((used + 1) * 2 > keys.size()) {
    // Grow to keep the load under a half.
    std::vector<uint64_t> old_keys(keys.empty() ? 0 : keys.size());
    std::vector<int32_t> old_values;
    old_keys.swap(keys);
    old_values.swap(values);
    const size_t cap = old_keys.empty() ? 1024 : old_keys.size() * 2;
    keys.assign(cap, kEmpty);
    values.assign(cap, 0);
    used = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty) insert(old_keys[i], old_values[i]);
    }
  }
  const size_t mask = keys.size() - 1;
  size_t i = hash(k) & mask;
  while (keys[i] != kEmpty) i = (i + 1) & mask;
  keys[i] = k;
  values[i] = v;
  ++used;
}

void GrammarMatcher::InternTable::erase(uint64_t k) {
  if (keys.empty()) return;
  const size_t mask = keys.size() - 1;
  size_t i = hash(k) & mask;
  while (keys[i] != k) {
    if (keys[i] == kEmpty) return;
    i = (i + 1) & mask;
  }
  // Backward-shift deletion: move later entries of the probe run into the hole so lookups never stop early.
  for (size_t j = (i + 1) & mask; keys[j] != kEmpty; j = (j + 1) & mask) {
    const size_t home = hash(keys[j]) & mask;
    // keys[j] may move to i when i lies cyclically in [home, j).
    if (((j - home) & mask) >= ((j - i) & mask)) {
      keys[i] = keys[j];
      values[i] = values[j];
      i = j;
    }
  }
  keys[i] = kEmpty;
  --used;
}

int32_t GrammarMatcher::new_node(int32_t pos, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  if (int32_t* found = intern_.find(key)) return *found;
  intern_.insert(key, static_cast<int32_t>(nodes_.size()));
  const int32_t depth = parent < 0 ? 0 : nodes_[static_cast<size_t>(parent)].depth + 1;
  nodes_.push_back(Node{pos, parent, depth});
  seen_.push_back(0);
  return static_cast<int32_t>(nodes_.size() - 1);
}

void GrammarMatcher::drop_nodes_from(size_t mark) {
  for (size_t i = mark; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    intern_.erase((static_cast<uint64_t>(static_cast<uint32_t>(n.pos)) << 32) | static_cast<uint32_t>(n.parent));
  }
  if (mark < nodes_.size()) {
    nodes_.resize(mark);
    seen_.resize(mark);
  }
}

void GrammarMatcher::truncate_nodes(size_t mark) { drop_nodes_from(std::max(mark, states_.back().node_mark)); }

bool GrammarMatcher::close(int32_t mark, std::vector<int32_t>* to, bool* accepting, int32_t* min_depth, bool* exited,
                           int32_t exit_depth) {
  size_t work = 0;
  bool ok = true;
  while (!work_.empty()) {
    const int32_t id = work_.back();
    work_.pop_back();
    if (seen_[static_cast<size_t>(id)] == epoch_) continue;
    seen_[static_cast<size_t>(id)] = epoch_;
    if (++work > kMaxStepWork) {
      work_.clear();
      return false;
    }
    const Node n = nodes_[static_cast<size_t>(id)];
    const GrammarElement& e = g_.elements[static_cast<size_t>(n.pos)];
    if (e.kind == GrammarElement::kBytes) {
      to->push_back(id);
    } else if (e.kind == GrammarElement::kEnd) {
      // Local mode stops where the key stops: at a node under exit_depth, or at the start rule's end unless the
      // key reaches the bottom (exit_depth <= 0), where ending is decided by the key's own nodes.
      if (exited != nullptr && n.parent < mark &&
          (n.parent < 0 ? exit_depth > 0 : nodes_[static_cast<size_t>(n.parent)].depth < exit_depth)) {
        *exited = true;
      } else if (n.parent < 0) {
        *accepting = true;
        *min_depth = -1;
      } else {
        if (n.parent < mark) *min_depth = std::min(*min_depth, nodes_[static_cast<size_t>(n.parent)].depth);
        work_.push_back(n.parent);
      }
    } else {
      if (n.depth >= kMaxStackDepth) {
        ok = false;
        continue;
      }
      // Return to the element after the reference, or straight to our parent when the reference ends the
      // alternative (tail call).
      const bool last = g_.elements[static_cast<size_t>(n.pos) + 1].kind == GrammarElement::kEnd;
      const int32_t ret = last ? n.parent : new_node(n.pos + 1, n.parent);
      for (uint32_t alt : g_.rules[e.arg].alternatives) work_.push_back(new_node(static_cast<int32_t>(alt), ret));
    }
  }
  // Distinct nodes can hold the same stack (two alternatives returning to equal positions): keep one.
  auto key = [this](int32_t id) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    return (static_cast<int64_t>(n.pos) << 32) | static_cast<uint32_t>(n.parent);
  };
  if (to->size() > 1) {
    std::sort(to->begin(), to->end(), [&](int32_t a, int32_t b) { return key(a) < key(b); });
    to->erase(std::unique(to->begin(), to->end(), [&](int32_t a, int32_t b) { return key(a) == key(b); }), to->end());
  }
  if (to->size() > kMaxStacks) return false;
  return ok;
}

bool GrammarMatcher::step(const int32_t* from, size_t n, uint8_t b, int32_t mark, std::vector<int32_t>* to,
                          bool* accepting, int32_t* min_depth, bool* exited, int32_t exit_depth) {
  to->clear();
  *accepting = false;
  if (++epoch_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    const Node& t = nodes_[static_cast<size_t>(from[i])];
    if (!g_.byte_sets[g_.elements[static_cast<size_t>(t.pos)].arg].has(b)) continue;
    work_.push_back(new_node(t.pos + 1, t.parent));
  }
  return close(mark, to, accepting, min_depth, exited, exit_depth);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  State s{states_.back().tops, states_.back().accepting, 0};
  const size_t mark = nodes_.size();
  int32_t min_depth = INT32_MAX;
  for (char c : bytes) {
    bool accepting = false;
    if (!step(s.tops.data(), s.tops.size(), static_cast<uint8_t>(c), static_cast<int32_t>(mark), &scratch_, &accepting,
              &min_depth)) {
      overflowed_ = true;
      truncate_nodes(mark);
      return false;
    }
    if (scratch_.empty() && !accepting) {
      truncate_nodes(mark);
      return false;
    }
    s.tops.swap(scratch_);
    s.accepting = accepting;
  }
  s.node_mark = nodes_.size();
  states_.push_back(std::move(s));
  return true;
}

void GrammarMatcher::rollback(size_t n) {
  n = std::min(n, states_.size() - 1);
  states_.resize(states_.size() - n);
  drop_nodes_from(states_.back().node_mark);
}

}  // namespace llm
}  // namespace ember
