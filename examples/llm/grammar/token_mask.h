// Which tokens of a vocabulary the grammar allows next: a bitmask over the vocabulary, computed from the
// matcher's state by walking a prefix trie of the tokens' bytes (a prefix shared by many tokens is stepped once;
// a byte the grammar refuses skips every token under it). The trie walked is built with the grammar, over byte
// classes (bytes no byte set of the grammar tells apart): tokens alike class by class are one path, so a cold walk
// inside a string or a character class steps one node for all the letter tokens of one length.
//
// Two caches. The local one is keyed by the positions of the stacks' tops and of the kLocalLevels nodes under
// the deepest top: a walk in local mode stops every path that would pop further (into the context those rules
// were called from) and marks that trie node "uncertain"; every other token is decided by those rules alone
// (inside a string: every token without a quote). Only the uncertain subtrees are then walked with the real
// stacks. Strings of one rule share one local entry wherever they appear.
//
// The state cache: a walk's result depends only on the stacks' top positions and on as many nodes below them as
// the walk popped into (a string's characters never look past the string's rule; a closing quote looks one or
// two levels further). The cache is keyed by exactly that: the positions of each stack from its top down to the
// lowest node any token's bytes reached, relative to the top, so the same situation at another nesting depth or
// in another object hits the same entry. A walk that passed a matcher bound is not cached.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "examples/llm/grammar/matcher.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/core/result.h"

namespace ember {
namespace llm {

class TokenVocabulary {
 public:
  // token_bytes[i]: the bytes token i stands for; an empty string marks a token the grammar never allows
  // (special tokens). stop_ids: the end-of-sequence tokens, allowed exactly when the grammar can end.
  TokenVocabulary(const std::vector<std::string>& token_bytes, std::vector<int32_t> stop_ids);

  // The bytes of every token of `tokenizer` (special and control tokens empty), with its EOS plus `extra_stop`
  // as stop tokens.
  static Result<std::unique_ptr<TokenVocabulary>> from_tokenizer(const Tokenizer& tokenizer,
                                                                 const std::vector<int64_t>& extra_stop = {});

  size_t size() const { return size_; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  // The trie in preorder: node i (depth depth[i] >= 1) adds byte[i] to its parent's prefix; its subtree is
  // [i, end[i]); the tokens whose bytes end there are token_ids[first_token[i] .. first_token[i + 1]).
  std::vector<uint8_t> byte;
  std::vector<uint32_t> end;
  std::vector<uint32_t> depth;
  std::vector<uint32_t> parent;  // kNoNode for depth 1
  std::vector<uint32_t> first_token;
  std::vector<int32_t> token_ids;
  uint32_t max_depth = 0;
  static constexpr uint32_t kNoNode = ~uint32_t{0};

 private:
  size_t size_;
  std::vector<std::string> bytes_;
  std::vector<int32_t> stop_ids_;
};

class TokenMasker {
 public:
  // A string's character is 3 levels under the string's rule (char class, repetition, string).
  static constexpr int32_t kLocalLevels = 3;

  // `vocab` and `grammar` (the one every matcher given to fill() runs) must outlive the masker. cache_bytes bounds
  // the cached masks (all dropped when full).
  TokenMasker(const TokenVocabulary& vocab, const Grammar& grammar, size_t cache_bytes = size_t{64} << 20);

  size_t words() const { return (vocab_.size() + 31) / 32; }
  // Bit i of mask[i / 32] set <=> token i may come next. mask has words() entries.
  void fill(GrammarMatcher& matcher, uint32_t* mask);

  size_t walks() const { return walks_; }
  size_t hits() const { return hits_; }
  size_t local_walks() const { return local_walks_; }

 private:
  struct LocalEntry {
    std::vector<uint32_t> accepted;
    std::vector<uint32_t> uncertain;  // trie nodes whose subtrees need the real stacks, in preorder
  };
  struct Entry {
    int32_t up;  // the walk looked at nodes down to (deepest top's depth - up)
    std::string chains;
    std::vector<uint32_t> mask;
  };
  // For the state's tops: the positions of each stack from its top down to absolute depth `cut`, sorted.
  std::string chain_key(const GrammarMatcher& m, const std::vector<int32_t>& tops, int32_t cut) const;
  // Walks class trie nodes [begin, end) from the state level_sid_[depth[begin] - 1], setting in `mask` the tokens it
  // allows. Local mode (`uncertain` given, `cut` the key's lowest depth) collects the prefixes that leave the key's
  // levels and stops at a matcher bound (false); otherwise a bound sets *overflow and the walk goes on.
  bool walk(GrammarMatcher& m, uint32_t begin, uint32_t end, int32_t mark, int32_t cut, uint32_t* mask,
            int32_t* min_depth, bool* overflow, std::vector<uint32_t>* uncertain);
  // Local mode from the tops alone; false when a bound was passed.
  bool walk_local(GrammarMatcher& m, int32_t mark, int32_t cut, LocalEntry* out);
  // The uncertain subtrees with the real stacks.
  void resolve(GrammarMatcher& m, const std::vector<uint32_t>& uncertain, int32_t mark, uint32_t* mask,
               int32_t* min_depth, bool* overflow);

  const TokenVocabulary& vocab_;
  size_t max_entries_;
  size_t entries_ = 0;
  std::unordered_map<std::string, std::vector<Entry>> cache_;  // by the tops' positions
  std::unordered_map<std::string, LocalEntry> local_;
  size_t local_bytes_ = 0;
  std::vector<uint32_t> level_node_;  // the trie node whose state level_sid_[d] is (resolve)
  // Walk states: within one fill() every distinct set of tops gets an id and every (state, byte class) step is
  // done once: all the tokens that start with a letter inside a string reach the same state, so most trie nodes cost a
  // table lookup. Cleared when fill() drops the nodes its walks made.
  struct WalkState {
    std::vector<int32_t> tops;
    bool accepting;
  };
  int32_t state_id(const std::vector<int32_t>& tops, bool accepting);
  // Transitions are encoded as the next state id, or kDead when no stack survives, with kExitedBit set in local
  // mode when a path left the key's levels.
  static constexpr int32_t kExitedBit = int32_t{1} << 30;
  static constexpr int32_t kDead = kExitedBit - 1;
  // The transition from state sid by byte class c, computed by the matcher once per (state, class, mode). Sets
  // *overflow when a matcher bound was passed (that result is not remembered).
  int32_t transition(GrammarMatcher& m, int32_t sid, uint8_t c, int32_t mark, bool local, int32_t cut,
                     int32_t* min_depth, bool* overflow);
  // Bytes that every byte set of the grammar holds or refuses together step every stack alike: transitions are
  // computed and stored per class of such bytes (a string's letters are one class), not per byte.
  std::vector<uint8_t> class_of_;  // per byte
  std::vector<uint8_t> class_byte_;  // per class: one of its bytes, to step the matcher with
  size_t stride_ = 0;  // transitions per walk state: the classes twice (local, real)
  // The vocabulary's trie with each byte replaced by its class, built with the grammar: tokens whose bytes fall in
  // the same classes one by one are allowed or refused together, so they share one path and a walk steps it once
  // (inside a string, every token of letters of one length is one node). Same layout as TokenVocabulary's trie;
  // cls[i] is node i's class.
  struct ClassTrie {
    std::vector<uint8_t> cls;
    std::vector<uint32_t> end;
    std::vector<uint32_t> depth;
    std::vector<uint32_t> parent;
    std::vector<uint32_t> first_token;
    std::vector<int32_t> token_ids;
  };
  ClassTrie trie_;
  void build_class_trie();
  std::vector<WalkState> wstates_;
  std::vector<uint8_t> ends_only_;  // per walk state: no stack left, only the end may follow
  std::unordered_map<std::string, int32_t> wstate_index_;
  // Per walk state, stride_ transitions (local mode's classes then the real stacks'): -1 not computed yet, else as
  // transition() returns.
  std::vector<int32_t> trans_;
  std::vector<int32_t> scratch_;
  std::vector<int32_t> level_sid_;  // the walk's state after depth d bytes
  size_t walks_ = 0, hits_ = 0, local_walks_ = 0;
};

}  // namespace llm
}  // namespace ember
