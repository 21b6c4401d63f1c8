// tests/model/attention_choice_test.cpp: the GPU attention chooser's host-side logic, which runs
// on any machine: the setting's candidates and its one-line refusal, the fastest that ran (a kernel
// that cannot run the shape never wins), the log line, and the cache file (kept across processes,
// started afresh when damaged). The measuring itself needs a GPU (model/gpu_attention.cpp).
#include "model/attention_choice.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::model {
namespace {

TEST(AttentionChoice, CandidatesOfTheSetting) {
  EXPECT_EQ(attention_candidates("auto"), (std::vector<std::string>{"cudnn", "flash", "efficient"}));
  EXPECT_EQ(attention_candidates("flash"), (std::vector<std::string>{"flash"}));
  EXPECT_EQ(attention_candidates("math"), (std::vector<std::string>{"math"}));
  EXPECT_TRUE(attention_candidates("default").empty());
  try {
    attention_candidates("fa3");
    FAIL() << "an unknown kernel was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "system: attention \"fa3\" is not one of auto, cudnn, flash, efficient, math, default");
  }
}

TEST(AttentionChoice, FastestThatRan) {
  EXPECT_EQ(fastest_attention({{"cudnn", 0.41}, {"flash", 0.52}, {"efficient", 0.77}}), "cudnn");
  EXPECT_EQ(fastest_attention({{"cudnn", -1}, {"flash", 0.52}, {"efficient", 0.50}}), "efficient");
  EXPECT_EQ(fastest_attention({{"cudnn", 0.5}, {"flash", 0.5}}), "cudnn");  // a tie: the earlier
  EXPECT_EQ(fastest_attention({{"cudnn", -1}, {"flash", -1}}), "");
  const std::string key = attention_key("NVIDIA H200", "2.15.0", 8, 12, 1024, 64, "BFloat16", true);
  EXPECT_EQ(key, "NVIDIA H200|torch 2.15.0|B8 H12 T1024 D64 BFloat16 causal train");
  EXPECT_EQ(describe_attention_choice(key, {{"cudnn", 0.41}, {"flash", 0.5237}, {"efficient", -1}}, "cudnn"),
            "cudnn for B8 H12 T1024 D64 BFloat16 causal train (cudnn 0.410 ms, flash 0.524 ms, efficient cannot run it)");
}

TEST(AttentionChoice, CacheFileAcrossProcesses) {
  test::TempDir tmp;
  const std::string file = tmp / "attention.json";
  {
    AttentionChoices c(file);
    EXPECT_FALSE(c.find("k1").has_value());
    c.remember("k1", "cudnn");
    c.remember("k2", "flash");
  }
  AttentionChoices again(file);  // a later run on the same GPU chooses at once
  EXPECT_EQ(again.find("k1").value(), "cudnn");
  EXPECT_EQ(again.find("k2").value(), "flash");
  write_file_atomic(file, "{not json");
  AttentionChoices damaged(file);  // measurements only: measured again
  EXPECT_FALSE(damaged.find("k1").has_value());
  AttentionChoices memory("");
  memory.remember("k", "efficient");
  EXPECT_EQ(memory.find("k").value(), "efficient");
}

}  // namespace
}  // namespace slm::model
