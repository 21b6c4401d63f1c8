// embed/windows.cpp: see windows.h. Byte offsets come from the tokens' own bytes: byte-level BPE
// spells the text exactly, so token i starts where the bytes of tokens 0..i-1 end.
#include "embed/windows.h"

#include <algorithm>

#include "util/utf8.h"

namespace slm::embed {

std::vector<Window> cut_windows(const tokenizer::BpeModel& tok, tokenizer::Encoder& enc, std::string_view text,
                                int64_t doc, int64_t window, int64_t stride, int64_t eot_id) {
  std::vector<uint32_t> ids;
  enc.encode(text, ids);
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> offset(static_cast<size_t>(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    offset[static_cast<size_t>(i) + 1] = offset[static_cast<size_t>(i)] +
                                          static_cast<int64_t>(tok.id_to_bytes[ids[static_cast<size_t>(i)]].size());
  const int64_t span = window - 1;  // text tokens per window
  std::vector<Window> out;
  for (int64_t start = 0; start < n; start += stride) {
    const int64_t end = std::min(start + span, n);
    Window w;
    w.doc = doc;
    w.begin = offset[static_cast<size_t>(start)];
    w.end = offset[static_cast<size_t>(end)];
    w.ids.reserve(static_cast<size_t>(end - start + 1));
    w.ids.push_back(eot_id);
    w.ids.insert(w.ids.end(), ids.begin() + start, ids.begin() + end);
    out.push_back(std::move(w));
    if (end == n) break;
  }
  return out;
}

std::pair<int64_t, int64_t> whole_characters(std::string_view text, int64_t begin, int64_t end) {
  return {static_cast<int64_t>(utf8_char_start(text, static_cast<size_t>(begin))),
          static_cast<int64_t>(utf8_char_end(text, static_cast<size_t>(end)))};
}

}  // namespace slm::embed
