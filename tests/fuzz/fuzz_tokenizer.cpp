// tests/fuzz/fuzz_tokenizer.cpp: the tokenizer. Any bytes encode and decode back to the same
// bytes (byte-level BPE is lossless); the Hugging Face files it reads (vocab.json, merges.txt,
// split from the input at the first NUL byte) load or fail with a UserError.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/encoder.h"
#include "tokenizer/hf_files.h"
#include "tokenizer/word_count.h"

namespace {
const slm::tokenizer::BpeModel& model() {
  static const slm::tokenizer::BpeModel m = [] {
    const std::string text = "the quick brown fox jumps over the lazy dog; The Quick, the lazy! 123 456 \n\t héllo wörld ☃";
    std::vector<std::string_view> docs(50, text);
    slm::tokenizer::TrainOptions o;
    o.vocab_size = 300;
    return slm::tokenizer::train_bpe(slm::tokenizer::count_words(docs, 1, nullptr), o, nullptr);
  }();
  return m;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  slm::tokenizer::Encoder enc(model());
  std::vector<uint32_t> ids;
  enc.encode(text, ids);
  if (slm::tokenizer::decode(model(), ids) != text) __builtin_trap();  // not lossless
  ids.clear();
  enc.encode_with_specials(text, ids);
  if (slm::tokenizer::decode(model(), ids) != text) __builtin_trap();
  const size_t nul = text.find('\0');
  const std::string dir = slm::fuzz::temp_dir() + "/tok";
  std::filesystem::create_directories(dir);
  slm::fuzz::write_temp("tok/vocab.json", text.substr(0, nul));
  slm::fuzz::write_temp("tok/merges.txt", nul == std::string::npos ? "" : text.substr(nul + 1));
  slm::fuzz::expect_clean([&] { slm::tokenizer::load_tokenizer(dir); });
  return 0;
}
