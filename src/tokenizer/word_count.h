// tokenizer/word_count.h: the first pass of BPE training: how often each pre-tokenized word occurs.
// Owns: count_words. Texts are split into ~1 MB chunks at points where pre-tokenization cannot
// straddle (pretokenize.h), counted on `threads` workers with private maps, then merged: the
// result does not depend on the number of threads.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace slm::tokenizer {

using WordCounts = std::unordered_map<std::string, int64_t>;

// on_bytes (optional) is called from workers with the number of bytes just counted.
WordCounts count_words(const std::vector<std::string_view>& texts, int threads,
                       const std::function<void(int64_t)>& on_bytes = {});

}  // namespace slm::tokenizer
