#include "examples/llm/grammar/token_mask.h"

#include <string.h>

#include <algorithm>
#include <numeric>

namespace ember {
namespace llm {

TokenVocabulary::TokenVocabulary(const std::vector<std::string>& token_bytes, std::vector<int32_t> stop_ids)
    : size_(token_bytes.size()), bytes_(token_bytes), stop_ids_(std::move(stop_ids)) {
  std::vector<int32_t> order;
  for (size_t i = 0; i < token_bytes.size(); ++i) {
    if (!token_bytes[i].empty() && !is_stop(static_cast<int32_t>(i))) order.push_back(static_cast<int32_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return token_bytes[static_cast<size_t>(a)] < token_bytes[static_cast<size_t>(b)];
  });
  // Sorted strings give the trie in preorder: each string adds nodes for the part past its common prefix with
  // the one before it; nodes left on the path close their subtree when the path leaves them.
  std::vector<uint32_t> path;  // node of each depth on the current prefix
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& s = token_bytes[static_cast<size_t>(id)];
    size_t common = 0;
    if (prev != nullptr) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    while (path.size() > common) {
      end[path.back()] = static_cast<uint32_t>(byte.size());
      path.pop_back();
    }
    for (size_t k = common; k < s.size(); ++k) {
      path.push_back(static_cast<uint32_t>(byte.size()));
      byte.push_back(static_cast<uint8_t>(s[k]));
      end.push_back(0);
      depth.push_back(static_cast<uint32_t>(k + 1));
      parent.push_back(k == 0 ? kNoNode : path[k - 1]);
      first_token.push_back(static_cast<uint32_t>(token_ids.size()));
    }
    token_ids.push_back(id);
    max_depth = std::max<uint32_t>(max_depth, static_cast<uint32_t>(s.size()));
    prev = &s;
  }
  while (!path.empty()) {
    end[path.back()] = static_cast<uint32_t>(byte.size());
    path.pop_back();
  }
  first_token.push_back(static_cast<uint32_t>(token_ids.size()));
}

bool TokenVocabulary::is_stop(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

Result<std::unique_ptr<TokenVocabulary>> TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer,
                                                                         const std::vector<int64_t>& extra_stop) {
  std::vector<std::string> bytes(tokenizer.vocab_size());
  const bool hf = strcmp(tokenizer.kind(), "huggingface-bpe") == 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    // prev = the token itself (not BOS): a SentencePiece piece keeps its leading space, as mid-text.
    Result<std::string> b = tokenizer.decode(id, id);
    if (!b.ok()) return b.error();
    if (hf) {
      // Special tokens are never text the grammar could match: skip_special drops exactly them.
      Result<std::string> plain = tokenizer.decode(std::vector<int32_t>{id}, true);
      if (!plain.ok()) return plain.error();
      if (plain->empty()) continue;
    }
    bytes[i] = std::move(*b);
  }
  std::vector<int32_t> stops;
  if (tokenizer.eos_id() >= 0) stops.push_back(tokenizer.eos_id());
  for (int64_t s : extra_stop) {
    if (s >= 0 && static_cast<size_t>(s) < bytes.size()) stops.push_back(static_cast<int32_t>(s));
  }
  return std::unique_ptr<TokenVocabulary>(new TokenVocabulary(bytes, std::move(stops)));
}

namespace {

// The byte sets the start rule can reach: a rule nothing refers to (a schema's unused base rules) never steps, so
// its sets need not split the classes.
std::vector<uint8_t> reachable_sets(const Grammar& g) {
  std::vector<uint8_t> used(g.byte_sets.size(), 0);
  if (g.root >= g.rules.size()) return used;
  std::vector<uint8_t> seen(g.rules.size(), 0);
  std::vector<uint32_t> todo{g.root};
  seen[g.root] = 1;
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    for (uint32_t alt : g.rules[r].alternatives) {
      for (size_t p = alt; g.elements[p].kind != GrammarElement::kEnd; ++p) {
        const GrammarElement& e = g.elements[p];
        if (e.kind == GrammarElement::kBytes) {
          used[e.arg] = 1;
        } else if (!seen[e.arg]) {
          seen[e.arg] = 1;
          todo.push_back(e.arg);
        }
      }
    }
  }
  return used;
}

// Splits the bytes into classes that no reachable byte set of `g` tells apart: each set refines the classes so far
// into the bytes it holds and those it refuses.
std::vector<uint8_t> byte_classes(const Grammar& g, size_t* n_classes) {
  std::vector<uint8_t> cls(256, 0);
  size_t n = 1;
  std::vector<int32_t> renumber;
  const std::vector<uint8_t> used = reachable_sets(g);
  for (size_t i = 0; i < g.byte_sets.size(); ++i) {
    if (!used[i]) continue;
    const ByteSet& set = g.byte_sets[i];
    renumber.assign(2 * n, -1);
    size_t next = 0;
    for (unsigned b = 0; b < 256; ++b) {
      int32_t& id = renumber[2 * size_t{cls[b]} + (set.has(static_cast<uint8_t>(b)) ? 1 : 0)];
      if (id < 0) id = static_cast<int32_t>(next++);
      cls[b] = static_cast<uint8_t>(id);
    }
    n = next;
    if (n == 256) break;  // every byte its own class: nothing left to split
  }
  *n_classes = n;
  return cls;
}

}  // namespace

TokenMasker::TokenMasker(const TokenVocabulary& vocab, const Grammar& grammar, size_t cache_bytes) : vocab_(vocab) {
  const size_t per_entry = std::max<size_t>(1, (vocab.size() + 31) / 32 * 4);
  max_entries_ = std::max<size_t>(1, cache_bytes / per_entry);
  level_sid_.resize(vocab.max_depth + 1);
  size_t n_classes = 0;
  class_of_ = byte_classes(grammar, &n_classes);
  class_byte_.assign(n_classes, 0);
  for (unsigned b = 256; b-- > 0;) class_byte_[class_of_[b]] = static_cast<uint8_t>(b);
  stride_ = 2 * n_classes;
  build_class_trie();
}

void TokenMasker::build_class_trie() {
  const TokenVocabulary& v = vocab_;
  const uint32_t kNone = TokenVocabulary::kNoNode;
  // Each byte node's class node: its parent's class node's child by the byte's class (a parent comes first in
  // preorder, so its class node is known).
  const size_t n = v.byte.size();
  std::vector<uint32_t> of(n);
  std::vector<uint32_t> parent;
  std::vector<uint8_t> cls;
  std::unordered_map<uint64_t, uint32_t> child;
  child.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t p = v.parent[i] == kNone ? kNone : of[v.parent[i]];
    const uint8_t c = class_of_[v.byte[i]];
    const auto made = child.emplace((uint64_t{p} << 8) | c, static_cast<uint32_t>(parent.size()));
    if (made.second) {
      parent.push_back(p);
      cls.push_back(c);
    }
    of[i] = made.first->second;
  }
  // Class nodes are made after their parents: subtree sizes add up backwards, and a preorder numbering follows
  // from placing each node's children one after another right after it.
  const size_t m = parent.size();
  std::vector<uint32_t> size(m, 1);
  for (size_t x = m; x-- > 0;) {
    if (parent[x] != kNone) size[parent[x]] += size[x];
  }
  std::vector<uint32_t> pre(m), next_slot(m);
  uint32_t next_root = 0;
  for (size_t x = 0; x < m; ++x) {
    if (parent[x] == kNone) {
      pre[x] = next_root;
      next_root += size[x];
    } else {
      pre[x] = next_slot[parent[x]];
      next_slot[parent[x]] += size[x];
    }
    next_slot[x] = pre[x] + 1;
  }
  ClassTrie& t = trie_;
  t.cls.assign(m, 0);
  t.end.assign(m, 0);
  t.depth.assign(m, 0);
  t.parent.assign(m, kNone);
  for (size_t x = 0; x < m; ++x) {
    const uint32_t i = pre[x];
    t.cls[i] = cls[x];
    t.end[i] = i + size[x];
    t.parent[i] = parent[x] == kNone ? kNone : pre[parent[x]];
    t.depth[i] = parent[x] == kNone ? 1 : t.depth[pre[parent[x]]] + 1;
  }
  // The tokens of each class node: its byte nodes' tokens gathered.
  t.first_token.assign(m + 1, 0);
  for (size_t i = 0; i < n; ++i) t.first_token[pre[of[i]] + 1] += v.first_token[i + 1] - v.first_token[i];
  for (size_t i = 0; i < m; ++i) t.first_token[i + 1] += t.first_token[i];
  t.token_ids.assign(v.token_ids.size(), 0);
  std::vector<uint32_t> slot(t.first_token.begin(), t.first_token.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t k = v.first_token[i]; k < v.first_token[i + 1]; ++k) t.token_ids[slot[pre[of[i]]]++] = v.token_ids[k];
  }
}

std::string TokenMasker::chain_key(const GrammarMatcher& m, const std::vector<int32_t>& tops, int32_t cut) const {
  std::vector<std::vector<int32_t>> chains;
  chains.reserve(tops.size());
  for (int32_t t : tops) {
    std::vector<int32_t> c{m.node(t).pos};
    int32_t n = m.node(t).parent;
    while (n >= 0 && m.node(n).depth >= cut) {
      c.push_back(m.node(n).pos);
      n = m.node(n).parent;
    }
    c.push_back(n < 0 ? -1 : -2);  // the bottom was reached, or the rest was not looked at
    chains.push_back(std::move(c));
  }
  std::sort(chains.begin(), chains.end());
  std::string key;
  for (const auto& c : chains) key.append(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(int32_t));
  return key;
}

int32_t TokenMasker::state_id(const std::vector<int32_t>& tops, bool accepting) {
  std::string key(reinterpret_cast<const char*>(tops.data()), tops.size() * sizeof(int32_t));
  key += accepting ? 'a' : 'n';
  auto it = wstate_index_.find(key);
  if (it != wstate_index_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(wstates_.size());
  wstates_.push_back(WalkState{tops, accepting});
  ends_only_.push_back(tops.empty() ? 1 : 0);
  trans_.resize(wstates_.size() * stride_, -1);
  wstate_index_.emplace(std::move(key), id);
  return id;
}

int32_t TokenMasker::transition(GrammarMatcher& m, int32_t sid, uint8_t c, int32_t mark, bool local, int32_t cut,
                                int32_t* min_depth, bool* overflow) {
  const size_t slot = static_cast<size_t>(sid) * stride_ + (local ? 0 : stride_ / 2) + c;
  const uint8_t b = class_byte_[c];
  if (trans_[slot] >= 0) return trans_[slot];
  bool accepting = false, ex = false;
  const std::vector<int32_t> from = wstates_[static_cast<size_t>(sid)].tops;
  const bool ok =
      m.step(from.data(), from.size(), b, mark, &scratch_, &accepting, min_depth, local ? &ex : nullptr, cut);
  if (!ok) *overflow = true;
  const bool dead = scratch_.empty() && !accepting;
  const int32_t t = (dead ? kDead : state_id(scratch_, accepting)) | (ex ? kExitedBit : 0);
  // A step that passed a bound is not remembered: the walk that met it is not cached either.
  if (ok) trans_[slot] = t;
  return t;
}

bool TokenMasker::walk(GrammarMatcher& m, uint32_t begin, uint32_t end, int32_t mark, int32_t cut, uint32_t* mask,
                       int32_t* min_depth, bool* overflow, std::vector<uint32_t>* uncertain) {
  const bool local = uncertain != nullptr;
  const size_t mode = local ? 0 : stride_ / 2;
  const size_t stride = stride_;
  const uint8_t* cls = trie_.cls.data();
  const uint32_t* depth = trie_.depth.data();
  const uint32_t* subtree_end = trie_.end.data();
  const uint32_t* first = trie_.first_token.data();
  const int32_t* ids = trie_.token_ids.data();
  int32_t* level = level_sid_.data();
  for (uint32_t i = begin; i < end;) {
    const uint32_t d = depth[i];
    // The walk's inner loop: most steps are a table lookup, the matcher runs only for a new (state, byte).
    int32_t t = trans_[static_cast<size_t>(level[d - 1]) * stride + mode + cls[i]];
    if (t < 0) {
      t = transition(m, level[d - 1], cls[i], mark, local, cut, min_depth, overflow);
      if (local && *overflow) return false;
    }
    if (t & kExitedBit) {
      // This prefix reaches the context: its whole subtree is decided by the real stacks.
      uncertain->push_back(i);
      i = subtree_end[i];
      continue;
    }
    if (t == kDead) {
      i = subtree_end[i];  // no token under this prefix is allowed
      continue;
    }
    level[d] = t;
    for (uint32_t k = first[i]; k < first[i + 1]; ++k) mask[ids[k] >> 5] |= uint32_t{1} << (ids[k] & 31);
    // Only the end can follow (in local mode: the key reached the bottom, so the walk saw the start rule end).
    i = ends_only_[static_cast<size_t>(t)] ? subtree_end[i] : i + 1;
  }
  return true;
}

bool TokenMasker::walk_local(GrammarMatcher& m, int32_t mark, int32_t cut, LocalEntry* out) {
  ++local_walks_;
  out->accepted.assign(words(), 0);
  out->uncertain.clear();
  level_sid_[0] = state_id(m.tops(), m.can_end());
  int32_t unused = INT32_MAX;
  bool overflow = false;
  return walk(m, 0, static_cast<uint32_t>(trie_.cls.size()), mark, cut, out->accepted.data(), &unused, &overflow,
              &out->uncertain);
}

void TokenMasker::resolve(GrammarMatcher& m, const std::vector<uint32_t>& uncertain, int32_t mark, uint32_t* mask,
                          int32_t* min_depth, bool* overflow) {
  level_sid_[0] = state_id(m.tops(), m.can_end());
  level_node_.assign(vocab_.max_depth + 1, TokenVocabulary::kNoNode);
  std::vector<uint32_t> chain;
  for (uint32_t u : uncertain) {
    // The real state before u: step the ancestors not already on the levels from the last subtree.
    chain.clear();
    for (uint32_t a = trie_.parent[u]; a != TokenVocabulary::kNoNode; a = trie_.parent[a]) chain.push_back(a);
    std::reverse(chain.begin(), chain.end());
    bool dead = false;
    for (size_t k = 0; k < chain.size() && !dead; ++k) {
      const uint32_t d = static_cast<uint32_t>(k + 1);
      if (level_node_[d] == chain[k]) continue;
      const int32_t next = transition(m, level_sid_[d - 1], trie_.cls[chain[k]], mark, false, 0, min_depth, overflow);
      level_node_[d] = chain[k];
      for (size_t j = d + 1; j < level_node_.size(); ++j) level_node_[j] = TokenVocabulary::kNoNode;
      dead = next == kDead;
      level_sid_[d] = next;
    }
    if (dead) continue;
    walk(m, u, trie_.end[u], mark, 0, mask, min_depth, overflow, nullptr);
    for (size_t j = trie_.depth[u]; j < level_node_.size(); ++j) level_node_[j] = TokenVocabulary::kNoNode;
  }
}

void TokenMasker::fill(GrammarMatcher& m, uint32_t* mask) {
  const size_t nw = words();
  const std::vector<int32_t>& tops = m.tops();
  int32_t deepest = -1;
  std::string bucket;
  for (int32_t t : tops) {
    deepest = std::max(deepest, m.node(t).depth);
    const int32_t pos = m.node(t).pos;
    bucket.append(reinterpret_cast<const char*>(&pos), sizeof(pos));
  }
  const Entry* hit = nullptr;
  auto it = cache_.find(bucket);
  if (it != cache_.end()) {
    for (const Entry& e : it->second) {
      if (chain_key(m, tops, deepest - e.up) == e.chains) {
        hit = &e;
        break;
      }
    }
  }
  if (hit != nullptr) {
    ++hits_;
    memcpy(mask, hit->mask.data(), nw * sizeof(uint32_t));
  } else {
    memset(mask, 0, nw * sizeof(uint32_t));
    int32_t min_depth = INT32_MAX;
    bool overflow = false;
    const int32_t mark = static_cast<int32_t>(m.num_nodes());
    if (!tops.empty()) {
      ++walks_;
      // The local walk reads the tops and kLocalLevels nodes under the deepest one.
      const int32_t cut = deepest - kLocalLevels;
      const std::string local_key = chain_key(m, tops, cut);
      auto local = local_.find(local_key);
      if (local == local_.end()) {
        LocalEntry e;
        if (walk_local(m, mark, cut, &e)) {
          if (local_bytes_ > max_entries_ * nw * sizeof(uint32_t)) {
            local_.clear();
            local_bytes_ = 0;
          }
          local_bytes_ += e.accepted.size() * 4 + e.uncertain.size() * 4 + local_key.size();
          local = local_.emplace(local_key, std::move(e)).first;
        }
      }
      if (local != local_.end()) {
        memcpy(mask, local->second.accepted.data(), nw * sizeof(uint32_t));
        resolve(m, local->second.uncertain, mark, mask, &min_depth, &overflow);
        // The local part read the nodes down to `cut`: the state cache's key must hold them too.
        min_depth = std::min(min_depth, cut < 0 ? -1 : cut);
      } else {
        // A bound was passed in local mode: the plain walk, uncached.
        level_sid_[0] = state_id(tops, m.can_end());
        walk(m, 0, static_cast<uint32_t>(trie_.cls.size()), mark, 0, mask, &min_depth, &overflow, nullptr);
        overflow = true;
      }
      m.truncate_nodes(static_cast<size_t>(mark));
      wstates_.clear();
      ends_only_.clear();
      wstate_index_.clear();
      trans_.clear();
    }
    if (!overflow) {
      if (entries_ >= max_entries_) {
        cache_.clear();
        entries_ = 0;
      }
      Entry e;
      // Nothing popped: only the tops were read (cut above every node). Popped to the bottom: everything.
      const int32_t cut = min_depth == INT32_MAX ? deepest + 1 : min_depth < 0 ? -1 : min_depth;
      e.up = deepest - cut;
      e.chains = chain_key(m, tops, cut);
      e.mask.assign(mask, mask + nw);
      std::vector<Entry>& list = cache_[bucket];
      if (list.size() >= 8) list.erase(list.begin());
      list.push_back(std::move(e));
      ++entries_;
    }
  }
  // Stop tokens: exactly when the text so far is complete.
  const bool end_ok = m.can_end();
  for (int32_t s : vocab_.stop_ids()) {
    if (end_ok) {
      mask[s >> 5] |= uint32_t{1} << (s & 31);
    } else {
      mask[s >> 5] &= ~(uint32_t{1} << (s & 31));
    }
  }
}

}  // namespace llm
}  // namespace ember
