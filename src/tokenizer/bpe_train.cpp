// tokenizer/bpe_train.cpp: see bpe_train.h.
#include "tokenizer/bpe_train.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <queue>
#include <set>

#include "tokenizer/byte_unicode.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace slm::tokenizer {
namespace {

struct Word {
  std::vector<int32_t> syms;
  int64_t count;
};

using PairDelta = std::vector<std::pair<uint64_t, int>>;

// Merges every (a, b) in w left to right into `result` in one pass (linear even for a word of
// millions of symbols); records each pair count change. The left neighbour of a merge is the
// output so far (possibly an earlier `result`), the right one still the input.
void merge_word(std::vector<int32_t>& w, int32_t a, int32_t b, int32_t result, PairDelta& d) {
  const size_t n = w.size();
  size_t j = 0;  // output length; j <= i, so writing w[j] never clobbers unread input
  for (size_t i = 0; i < n;) {
    if (i + 1 < n && w[i] == a && w[i + 1] == b) {
      if (j > 0) {
        d.emplace_back(BpeModel::key(w[j - 1], a), -1);
        d.emplace_back(BpeModel::key(w[j - 1], result), +1);
      }
      if (i + 2 < n) {
        d.emplace_back(BpeModel::key(b, w[i + 2]), -1);
        d.emplace_back(BpeModel::key(result, w[i + 2]), +1);
      }
      d.emplace_back(BpeModel::key(a, b), -1);
      w[j++] = result;
      i += 2;
    } else {
      w[j++] = w[i++];
    }
  }
  w.resize(j);
}

struct HeapItem {
  int64_t count;
  uint64_t pair;
  bool operator<(const HeapItem& o) const {  // max count first, then smaller pair
    return count != o.count ? count < o.count : pair > o.pair;
  }
};

// The words as byte ids, in a canonical order so that results never depend on hash-map iteration
// order.
std::vector<Word> words_of(const WordCounts& counts, const std::array<int32_t, 256>& id_of_byte) {
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (auto [text, n] : sorted) {
    Word w{{}, n};
    for (unsigned char c : text) w.syms.push_back(id_of_byte[c]);
    words.push_back(std::move(w));
  }
  return words;
}

// Every adjacent pair's count over the words (each word weighted by its count), the words it occurs
// in (ascending; a merge may append one again), and a max-heap of (count, pair) whose stale entries
// are skipped when popped. delta and changed: a merge's scratch, kept for their memory.
struct Pairs {
  std::unordered_map<uint64_t, int64_t> count;
  std::unordered_map<uint64_t, std::vector<int32_t>> where;
  std::priority_queue<HeapItem> heap;
  PairDelta delta;
  std::unordered_map<uint64_t, int64_t> changed;
};

Pairs count_pairs(const std::vector<Word>& words) {
  Pairs p;
  for (size_t wi = 0; wi < words.size(); ++wi) {
    const auto& s = words[wi].syms;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t k = BpeModel::key(s[i], s[i + 1]);
      p.count[k] += words[wi].count;
      auto& v = p.where[k];
      if (v.empty() || v.back() != static_cast<int32_t>(wi)) v.push_back(static_cast<int32_t>(wi));
    }
  }
  for (auto [k, n] : p.count) p.heap.push({n, k});
  return p;
}

// The most frequent pair with at least min_frequency occurrences, popped from the heap; 0 and no
// pair where none is left.
std::pair<uint64_t, bool> best_pair(Pairs& p, int64_t min_frequency) {
  while (!p.heap.empty()) {
    const HeapItem top = p.heap.top();
    p.heap.pop();
    const int64_t cur = p.count[top.pair];
    if (cur != top.count) {  // stale entry: counts only fall for pairs already in the heap
      if (cur > 0) p.heap.push({cur, top.pair});
      continue;
    }
    if (cur < min_frequency) break;
    return {top.pair, true};
  }
  return {0, false};
}

// Merges the pair (a, b) into `result` in every word that has it; updates the counts and pushes the
// pairs whose counts grew.
void merge_everywhere(std::vector<Word>& words, Pairs& p, uint64_t pair, int32_t result) {
  const auto a = static_cast<int32_t>(pair >> 32), b = static_cast<int32_t>(pair & 0xffffffffu);
  std::vector<int32_t> ws = std::move(p.where[pair]);
  p.where.erase(pair);
  std::sort(ws.begin(), ws.end());
  ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
  p.changed.clear();
  for (int32_t wi : ws) {
    p.delta.clear();
    merge_word(words[wi].syms, a, b, result, p.delta);
    for (auto [k, d] : p.delta) {
      p.changed[k] += d * words[wi].count;
      if (d > 0) {
        auto& v = p.where[k];
        if (v.empty() || v.back() != wi) v.push_back(wi);
      }
    }
  }
  for (auto [k, d] : p.changed) {
    int64_t& n = p.count[k];
    n += d;
    if (d > 0) p.heap.push({n, k});
  }
}

}  // namespace

void validate(const TrainOptions& opt) {
  std::set<std::string> uniq(opt.specials.begin(), opt.specials.end());
  if (uniq.size() != opt.specials.size()) throw UserError("special tokens: a token is listed twice");
  for (const auto& s : opt.specials)
    if (s.empty()) throw UserError("special tokens: empty token");
  const int min_vocab = 256 + static_cast<int>(opt.specials.size());
  if (opt.vocab_size < min_vocab)
    throw UserError(fmt::format("vocab size {} is smaller than 256 bytes + {} special tokens = {}",
                                opt.vocab_size, opt.specials.size(), min_vocab));
  if (opt.min_frequency < 1) throw UserError("min frequency must be at least 1");
}

BpeModel train_bpe(const WordCounts& counts, const TrainOptions& opt,
                   const std::function<void(int)>& on_merge) {
  validate(opt);
  const int min_vocab = 256 + static_cast<int>(opt.specials.size());
  BpeModel m;
  std::array<int32_t, 256> id_of_byte{};
  for (int i = 0; i < 256; ++i) {
    unsigned char b = base_byte_order()[i];
    m.id_to_bytes.emplace_back(1, static_cast<char>(b));
    id_of_byte[b] = i;
  }

  std::vector<Word> words = words_of(counts, id_of_byte);
  Pairs pairs = count_pairs(words);
  const int target_merges = opt.vocab_size - min_vocab;
  while (static_cast<int>(m.merges.size()) < target_merges) {
    const auto [pair, found] = best_pair(pairs, opt.min_frequency);
    if (!found) break;
    const auto a = static_cast<int32_t>(pair >> 32), b = static_cast<int32_t>(pair & 0xffffffffu);
    const auto result = static_cast<int32_t>(m.id_to_bytes.size());
    m.id_to_bytes.push_back(m.id_to_bytes[a] + m.id_to_bytes[b]);
    m.merges.emplace_back(a, b);
    merge_everywhere(words, pairs, pair, result);
    if (on_merge) on_merge(static_cast<int>(m.merges.size()));
    if ((m.merges.size() & 255) == 0) throw_if_interrupted();
  }

  m.is_special.assign(m.id_to_bytes.size(), false);
  for (const auto& s : opt.specials) {
    m.id_to_bytes.push_back(s);
    m.is_special.push_back(true);
  }
  index_model(m, "trained tokenizer");
  return m;
}

}  // namespace slm::tokenizer
