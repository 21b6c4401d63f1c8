// tokenizer/word_count.cpp: see word_count.h.
#include "tokenizer/word_count.h"

#include "tokenizer/pretokenize.h"
#include "util/interrupt.h"
#include "util/threads.h"

namespace slm::tokenizer {

WordCounts count_words(const std::vector<std::string_view>& texts, int threads,
                       const std::function<void(int64_t)>& on_bytes) {
  constexpr size_t kChunk = 1 << 20;
  std::vector<std::string_view> chunks;
  for (std::string_view t : texts)
    for (std::string_view c : split_for_threads(t, kChunk))
      if (!c.empty()) chunks.push_back(c);
  const int workers = std::max(1, std::min<int>(threads, static_cast<int>(chunks.size())));
  std::vector<WordCounts> local(workers);
  std::vector<std::unique_ptr<Pretokenizer>> pretok(workers);
  parallel_for(static_cast<int64_t>(chunks.size()), workers, [&](int64_t i, int w) {
    throw_if_interrupted();
    if (!pretok[w]) pretok[w] = std::make_unique<Pretokenizer>();
    WordCounts& counts = local[w];
    pretok[w]->split(chunks[i], [&](std::string_view word) { ++counts[std::string(word)]; });
    if (on_bytes) on_bytes(static_cast<int64_t>(chunks[i].size()));
  });
  WordCounts total = std::move(local[0]);
  for (int w = 1; w < workers; ++w)
    for (auto& [word, n] : local[w]) total[word] += n;
  return total;
}

}  // namespace slm::tokenizer
