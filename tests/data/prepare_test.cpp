// tests/data/prepare_test.cpp: raw text -> shards + manifest: every document is in exactly one
// split, preceded by <|endoftext|>, decodes back exactly; shards roll over; the output directory
// is all-or-nothing; a dataset refuses a different tokenizer; one document holds out its end.
#include "data/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>

#include "test_util.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/hf_files.h"
#include "util/error.h"

namespace slm::data {
namespace fs = std::filesystem;

struct PrepareFixture : ::testing::Test {
  test::TempDir tmp;
  std::vector<std::string> docs;
  tokenizer::BpeModel model;
  PrepareOptions opt;

  void SetUp() override {
    std::string corpus;
    for (int i = 0; i < 40; ++i) {
      docs.push_back(fmt::format("Document {} says: the fox {} jumps.", i, std::string(i % 7, 'x')));
      corpus += docs.back() + "\n\n";
    }
    test::write(tmp / "corpus.txt", corpus);
    tokenizer::TrainOptions to;
    to.vocab_size = 320;
    model = tokenizer::train_bpe(tokenizer::count_words({corpus}, 1), to);
    tokenizer::save_tokenizer(model, tmp / "tok", false);
    opt.inputs = {tmp / "corpus.txt"};
    opt.corpus.separator = "blank";
    opt.tokenizer_dir = tmp / "tok";
    opt.out = tmp / "ds";
    opt.val_fraction = 0.1;
    opt.shard_tokens = 100;
    opt.quiet = true;
  }

  // All documents of a split, decoded, in order.
  std::vector<std::string> decode_split(const std::vector<Shard>& shards) {
    std::vector<uint32_t> ids;
    for (const Shard& s : shards)
      for (int64_t i = 0; i < s.size(); ++i) ids.push_back(s[i]);
    std::vector<std::string> out;
    const uint32_t eot = static_cast<uint32_t>(model.special_id("<|endoftext|>"));
    EXPECT_EQ(ids.at(0), eot);
    std::vector<uint32_t> cur;
    for (size_t i = 1; i <= ids.size(); ++i) {
      if (i == ids.size() || ids[i] == eot) {
        out.push_back(tokenizer::decode(model, cur));
        cur.clear();
      } else {
        cur.push_back(ids[i]);
      }
    }
    return out;
  }
};

TEST(ChooseVal, ExactCountSeededAndBounded) {
  auto v = choose_val_docs(1000, 0.05, 1);
  EXPECT_EQ(std::count(v.begin(), v.end(), true), 50);
  EXPECT_EQ(v, choose_val_docs(1000, 0.05, 1));
  EXPECT_NE(v, choose_val_docs(1000, 0.05, 2));
  auto small = choose_val_docs(3, 0.01, 1);  // rounds to 0 -> at least one
  EXPECT_EQ(std::count(small.begin(), small.end(), true), 1);
  auto none = choose_val_docs(10, 0.0, 1);
  EXPECT_EQ(std::count(none.begin(), none.end(), true), 0);
  auto one = choose_val_docs(1, 0.5, 1);  // one document: no document can go
  EXPECT_EQ(one, std::vector<bool>{false});
}

TEST_F(PrepareFixture, EveryDocumentOnceAndExact) {
  Manifest m = prepare_dataset(opt);
  EXPECT_EQ(m.train.documents, 36);
  EXPECT_EQ(m.val.documents, 4);
  EXPECT_GT(m.train.shards.size(), 1u);  // 100-token shards roll over
  Dataset d = open_dataset(opt.out, tokenizer::model_identity(model));
  std::vector<std::string> train = decode_split(d.train), val = decode_split(d.val);
  EXPECT_EQ(train.size(), 36u);
  EXPECT_EQ(val.size(), 4u);
  std::vector<std::string> all = train;
  all.insert(all.end(), val.begin(), val.end());
  std::sort(all.begin(), all.end());
  std::vector<std::string> want = docs;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(all, want);
  int64_t tokens = 0;
  for (const Shard& s : d.train) tokens += s.size();
  EXPECT_EQ(tokens, m.train.tokens);
  // Same inputs and seed: byte-identical shards.
  PrepareOptions again = opt;
  again.out = tmp / "ds2";
  again.threads = 1;
  prepare_dataset(again);
  EXPECT_EQ(read_file(opt.out + "/train_000000.bin"), read_file(again.out + "/train_000000.bin"));
}

TEST_F(PrepareFixture, RefusesDifferentTokenizer) {
  prepare_dataset(opt);
  try {
    open_dataset(opt.out, "0123456789abcdef0123456789abcdef");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("prepared with a different tokenizer"), std::string::npos);
  }
}

TEST_F(PrepareFixture, NoPartialOutputOnError) {
  test::write(tmp / "bad.jsonl", "{\"text\": \"fine\"}\nnot json\n");
  opt.inputs.push_back(tmp / "bad.jsonl");
  EXPECT_THROW(prepare_dataset(opt), UserError);
  for (auto& e : fs::directory_iterator(tmp.path))
    EXPECT_EQ(e.path().filename().string().find("ds"), std::string::npos) << e.path();
}

TEST_F(PrepareFixture, BadOptionsAndCorpora) {
  PrepareOptions o = opt;
  o.val_fraction = 0.7;
  EXPECT_THROW(prepare_dataset(o), UserError);
  o = opt;
  o.eot = "<|nope|>";
  EXPECT_THROW(prepare_dataset(o), UserError);
  o = opt;
  o.corpus.separator = "";  // one document and no validation split: all of it trains
  o.val_fraction = 0;
  Manifest m = prepare_dataset(o);
  EXPECT_EQ(m.train.documents, 1);
  EXPECT_TRUE(m.val.shards.empty());
  o.inputs = {tmp / "tiny.txt"};  // one token: nothing to hold out
  test::write(tmp / "tiny.txt", "x");
  o.val_fraction = 0.1;
  o.overwrite = true;
  EXPECT_THROW(prepare_dataset(o), UserError);
}

// One document (one big text file): its last val_fraction of tokens is the validation split, cut
// at a token boundary; train + val decode back to the whole text.
TEST_F(PrepareFixture, OneDocumentHoldsOutItsEnd) {
  opt.corpus.separator = "";
  opt.val_fraction = 0.1;
  Manifest m = prepare_dataset(opt);
  EXPECT_EQ(m.val_split, "tail");
  EXPECT_EQ(m.train.documents, 1);
  EXPECT_EQ(m.val.documents, 1);
  const int64_t n = m.train.tokens + m.val.tokens - 2;  // the document's tokens, less the two eot
  EXPECT_EQ(m.val.tokens - 1, std::llround(0.1 * static_cast<double>(n)));
  Dataset d = open_dataset(opt.out, tokenizer::model_identity(model));
  EXPECT_EQ(read_manifest(opt.out).val_split, "tail");
  std::vector<std::string> train = decode_split(d.train), val = decode_split(d.val);
  ASSERT_EQ(train.size(), 1u);
  ASSERT_EQ(val.size(), 1u);
  EXPECT_EQ(train[0] + val[0], read_file(tmp / "corpus.txt"));
  EXPECT_EQ(m.train.bytes + m.val.bytes, static_cast<int64_t>(read_file(tmp / "corpus.txt").size()));
  EXPECT_EQ(m.val.bytes, static_cast<int64_t>(val[0].size()));
  EXPECT_GT(val[0].size(), 0u);
}

}  // namespace slm::data
