// tokenizer/bpe_train.cpp: see bpe_train.h.
#include "tokenizer/bpe_train.h"

#include <algorithm>
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

  // Words in a canonical order so that results never depend on hash-map iteration order.
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (auto [text, n] : sorted) {
    Word w{{}, n};
    for (unsigned char c : text) w.syms.push_back(id_of_byte[c]);
    words.push_back(std::move(w));
  }

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> where;
  for (size_t wi = 0; wi < words.size(); ++wi) {
    const auto& s = words[wi].syms;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t k = BpeModel::key(s[i], s[i + 1]);
      pair_count[k] += words[wi].count;
      auto& v = where[k];
      if (v.empty() || v.back() != static_cast<int32_t>(wi)) v.push_back(static_cast<int32_t>(wi));
    }
  }
  std::priority_queue<HeapItem> heap;
  for (auto [k, n] : pair_count) heap.push({n, k});

  const int target_merges = opt.vocab_size - min_vocab;
  PairDelta delta;
  std::unordered_map<uint64_t, int64_t> changed;
  while (static_cast<int>(m.merges.size()) < target_merges && !heap.empty()) {
    HeapItem top = heap.top();
    heap.pop();
    int64_t cur = pair_count[top.pair];
    if (cur != top.count) {  // stale entry: counts only fall for pairs already in the heap
      if (cur > 0) heap.push({cur, top.pair});
      continue;
    }
    if (cur < opt.min_frequency) break;
    auto a = static_cast<int32_t>(top.pair >> 32), b = static_cast<int32_t>(top.pair & 0xffffffffu);
    auto result = static_cast<int32_t>(m.id_to_bytes.size());
    m.id_to_bytes.push_back(m.id_to_bytes[a] + m.id_to_bytes[b]);
    m.merges.emplace_back(a, b);

    std::vector<int32_t> ws = std::move(where[top.pair]);
    where.erase(top.pair);
    std::sort(ws.begin(), ws.end());
    ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
    changed.clear();
    for (int32_t wi : ws) {
      delta.clear();
      merge_word(words[wi].syms, a, b, result, delta);
      for (auto [k, d] : delta) {
        changed[k] += d * words[wi].count;
        if (d > 0) {
          auto& v = where[k];
          if (v.empty() || v.back() != wi) v.push_back(wi);
        }
      }
    }
    for (auto [k, d] : changed) {
      int64_t& n = pair_count[k];
      n += d;
      if (d > 0) heap.push({n, k});
    }
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
