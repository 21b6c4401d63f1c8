// tokenizer/encoder.cpp: see encoder.h.
#include "tokenizer/encoder.h"

#include <queue>

namespace slm::tokenizer {

Encoder::Encoder(const BpeModel& model, size_t cache_entries)
    : model_(model), cache_entries_(cache_entries) {}

void Encoder::encode_word(std::string_view word, std::vector<uint32_t>& out) const {
  const size_t n = word.size();
  if (n == 1) {
    out.push_back(static_cast<uint32_t>(model_.byte_id[static_cast<unsigned char>(word[0])]));
    return;
  }
  struct Sym {
    int32_t id, prev, next;
  };
  std::vector<Sym> sym(n);
  for (size_t i = 0; i < n; ++i)
    sym[i] = {model_.byte_id[static_cast<unsigned char>(word[i])], static_cast<int32_t>(i) - 1,
              i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  struct Cand {
    int32_t rank, pos, left, right;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    int32_t r = sym[pos].next;
    auto it = model_.merge_of.find(BpeModel::key(sym[pos].id, sym[r].id));
    if (it != model_.merge_of.end()) heap.push({it->second.rank, pos, sym[pos].id, sym[r].id});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    Sym& s = sym[c.pos];
    if (s.id != c.left || s.next < 0 || sym[s.next].id != c.right) continue;  // stale
    Sym& r = sym[s.next];
    s.id = model_.merge_of.at(BpeModel::key(c.left, c.right)).result;
    s.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.pos;
    r.id = -1;  // dead
    consider(s.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(static_cast<uint32_t>(sym[i].id));
}

void Encoder::encode(std::string_view text, std::vector<uint32_t>& out) {
  pretok_.split(text, [&](std::string_view word) {
    auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    size_t start = out.size();
    encode_word(word, out);
    if (cache_.size() >= cache_entries_) cache_.clear();
    cache_.emplace(std::string(word), std::vector<uint32_t>(out.begin() + start, out.end()));
  });
}

void Encoder::encode_with_specials(std::string_view text, std::vector<uint32_t>& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::string_view::npos, best_len = 0;
    int32_t best_id = -1;
    for (const auto& [s, id] : model_.special_to_id) {
      size_t f = text.find(s, pos);
      if (f != std::string_view::npos && (f < best || (f == best && s.size() > best_len))) {
        best = f;
        best_len = s.size();
        best_id = id;
      }
    }
    if (best == std::string_view::npos || best_len == 0) {
      encode(text.substr(pos), out);
      return;
    }
    encode(text.substr(pos, best - pos), out);
    out.push_back(static_cast<uint32_t>(best_id));
    pos = best + best_len;
  }
}

}  // namespace slm::tokenizer
