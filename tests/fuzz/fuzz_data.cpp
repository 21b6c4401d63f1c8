// tests/fuzz/fuzz_data.cpp: the data files slmtrain reads back: a token shard, a dataset
// manifest, a JSON-lines corpus. Each opens or fails with a UserError.
#include <string>

#include "data/corpus.h"
#include "data/manifest.h"
#include "data/shard.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  slm::fuzz::expect_clean([&] {
    slm::data::Shard s(slm::fuzz::write_temp("x.bin", bytes));
    slm::data::find_token_outside(s, 50257);
  });
  std::filesystem::create_directories(slm::fuzz::temp_dir() + "/ds");
  slm::fuzz::write_temp("ds/manifest.json", bytes);
  slm::fuzz::expect_clean([&] { slm::data::open_dataset(slm::fuzz::temp_dir() + "/ds"); });
  slm::fuzz::expect_clean([&] {
    slm::data::CorpusOptions o;
    slm::data::load_corpus({slm::fuzz::write_temp("c.jsonl", bytes)}, o);
  });
  return 0;
}
