// embed/windows.h: documents cut into the token windows that get one embedding each.
// Owns: Window (its tokens, and which document and byte range of it they cover), cut_windows, and
// the range an index entry keeps: the window's bytes widened to whole UTF-8 characters.
// Every window starts with the end-of-text token, as every training document does, so a window
// reads like the start of a document to the model; pooling leaves that token out (pooling.h).
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/encoder.h"

namespace slm::embed {

struct Window {
  int64_t doc = 0;             // the document's index in corpus order
  int64_t begin = 0, end = 0;  // byte range [begin, end) of the document that the tokens spell
  std::vector<int64_t> ids;    // eot, then at most window - 1 tokens of the document
};

// Windows of `text` (document `doc`): at most `window` tokens each (the eot included), starting
// every `stride` text tokens, the last one reaching the document's end; one window for a short
// document. stride <= window - 1 (overlap when smaller). An empty document has no window.
std::vector<Window> cut_windows(const tokenizer::BpeModel& tok, tokenizer::Encoder& enc, std::string_view text,
                                int64_t doc, int64_t window, int64_t stride, int64_t eot_id);

// [begin, end) widened to whole UTF-8 characters of `text`: byte-level BPE tokens may split a
// character, so a window's own range can begin or end inside one. Index entries keep this range, so
// their text is never cut inside a character (what `slm search` shows and writes as JSON).
std::pair<int64_t, int64_t> whole_characters(std::string_view text, int64_t begin, int64_t end);

}  // namespace slm::embed
