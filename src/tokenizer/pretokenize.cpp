// tokenizer/pretokenize.cpp: see pretokenize.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include <stdexcept>
#include <vector>

namespace slm::tokenizer {

static const char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Pretokenizer::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
};

Pretokenizer::Pretokenizer() : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off,
                              nullptr);
  if (!impl_->code) throw std::logic_error("GPT-2 pre-tokenization pattern failed to compile");
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on error
  impl_->md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  impl_->mctx = pcre2_match_context_create(nullptr);
  impl_->jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_jit_stack_assign(impl_->mctx, nullptr, impl_->jit_stack);
}

Pretokenizer::~Pretokenizer() {
  pcre2_jit_stack_free(impl_->jit_stack);
  pcre2_match_context_free(impl_->mctx);
  pcre2_match_data_free(impl_->md);
  pcre2_code_free(impl_->code);
}

void Pretokenizer::split(std::string_view text, const std::function<void(std::string_view)>& fn) {
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, 0, impl_->md, impl_->mctx);
    size_t start = text.size(), end = text.size();
    if (rc > 0) {
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(impl_->md);
      start = ov[0];
      end = ov[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      throw std::runtime_error("pre-tokenization: PCRE2 match error " + std::to_string(rc));
    }
    if (start > pos) fn(text.substr(pos, start - pos));  // bytes no branch matched (bad UTF-8)
    if (end > start) fn(text.substr(start, end - start));
    pos = end > start ? end : std::max(end, pos + 1);
  }
}

std::vector<size_t> safe_split_points(std::string_view text, size_t target_chunk_bytes) {
  // ASCII and not whitespace: a byte that can neither be, nor end, a whitespace run.
  auto solid = [](unsigned char c) {
    return c < 0x80 && c != ' ' && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\v';
  };
  std::vector<size_t> points{0};
  size_t from = target_chunk_bytes;
  while (from < text.size()) {
    size_t nl = text.find('\n', from);
    while (nl != std::string_view::npos && nl + 1 < text.size() &&
           !(nl > 0 && solid(static_cast<unsigned char>(text[nl - 1])) &&
             solid(static_cast<unsigned char>(text[nl + 1]))))
      nl = text.find('\n', nl + 1);
    if (nl == std::string_view::npos || nl + 1 >= text.size()) break;
    points.push_back(nl + 1);
    from = nl + 1 + target_chunk_bytes;
  }
  return points;
}

}  // namespace slm::tokenizer

namespace slm::tokenizer {

std::vector<std::string_view> split_for_threads(std::string_view text, size_t target_chunk_bytes) {
  if (text.size() <= target_chunk_bytes) return {text};
  std::vector<size_t> pts = safe_split_points(text, target_chunk_bytes);
  pts.push_back(text.size());
  std::vector<std::string_view> out;
  for (size_t i = 0; i + 1 < pts.size(); ++i) out.push_back(text.substr(pts[i], pts[i + 1] - pts[i]));
  return out;
}

}  // namespace slm::tokenizer
