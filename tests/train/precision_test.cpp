// tests/train/precision_test.cpp: dynamic loss scaling follows GradScaler's rules; precision
// choices and their errors; the measurements behind "auto" cached per build.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include <torch/version.h>

#include "host/hardware.h"
#include "host/precision_probe.h"
#include "model/kernel_threads.h"
#include "test_util.h"
#include "train/precision.h"
#include "util/error.h"
#include "util/files.h"

using slm::train::LossScaler;
using slm::train::update_loss_scale;

TEST(LossScale, BacksOffOnOverflowAndGrowsAfterInterval) {
  LossScaler s;
  s.enabled = true;
  s.scale = 1024;
  s.growth_interval = 3;
  EXPECT_FALSE(update_loss_scale(s, false));  // overflow: skip, halve
  EXPECT_EQ(s.scale, 512);
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 512);
  EXPECT_TRUE(update_loss_scale(s, true));  // third good step in a row: double
  EXPECT_EQ(s.scale, 1024);
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_EQ(s.scale, 512);  // the count restarted after the overflow
}

TEST(LossScale, NeverBelowOne) {
  LossScaler s;
  s.enabled = true;
  s.scale = 1;
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_EQ(s.scale, 1);
}

TEST(LossScale, DisabledStillSkipsNonFiniteSteps) {
  LossScaler s;
  EXPECT_TRUE(update_loss_scale(s, true));
  EXPECT_FALSE(update_loss_scale(s, false));
  EXPECT_EQ(s.scale, 65536);
}

TEST(Precision, Fp16NeedsCuda) {
  std::string why;
  const slm::train::StepShape shape{slm::model::GPT2Config{}, 2, 32};
  EXPECT_THROW(slm::train::resolve_precision("fp16", "cpu", shape, &why), slm::UserError);
  EXPECT_EQ(slm::train::resolve_precision("fp32", "cpu", shape, &why), "fp32");
  EXPECT_EQ(why, "as configured");
}

// An empty HOME (so an empty ~/.cache/slmtrain) for one test, the old one back afterwards.

// "auto" on a CPU times both precisions (then reads the cache) and picks the faster, saying so.
TEST(Precision, AutoOnCpuDecidesByMeasurement) {
  const slm::test::TempHome home("precision");
  at::set_num_threads(1);  // CI runs another test beside this one: a core each
  slm::model::GPT2Config m;
  m.n_layer = 2, m.n_head = 2, m.n_embd = 64, m.block_size = 32, m.vocab_size = 300;
  const slm::host::PrecisionTiming t = slm::host::time_precisions(m, 2, 32);
  EXPECT_GT(t.fp32_s, 0);
  EXPECT_GT(t.bf16_s, 0);
  if (t.source.find("busy") != std::string::npos) GTEST_SKIP() << t.source;  // CI's other test took a core
  EXPECT_EQ(t.source, "measured now");
  EXPECT_TRUE(std::filesystem::exists(home.dir + "/.cache/slmtrain/precision.json"));
  // Kept per build: the key names the LibTorch and its BLAS (both builds share the folder).
  const std::string cached = slm::read_file(home.dir + "/.cache/slmtrain/precision.json");
  EXPECT_NE(cached.find(std::string("LibTorch ") + TORCH_VERSION + ", BLAS "), std::string::npos) << cached;
  std::string why;
  const std::string p = slm::train::resolve_precision("auto", "cpu", {m, 2, 32}, &why);
  EXPECT_EQ(p, t.bf16_s < 0.97 * t.fp32_s ? "bf16" : "fp32");
  EXPECT_NE(why.find("fp32 "), std::string::npos) << why;
  EXPECT_NE(why.find("cached"), std::string::npos) << why;  // the second call reads the cache
}

// The probe's timing rule: a warm-up and the best of three, or the warm-up alone once it has taken
// longer than the limit (bf16 emulated on a CPU without bf16 instructions).
TEST(Precision, BestTimeStopsAfterTheWarmUpOnlyPastItsLimit) {
  int runs = 0;
  const auto run = [&] { ++runs; };
  EXPECT_GE(slm::host::best_time(run, slm::host::kNoLimit), 0.0);
  EXPECT_EQ(runs, 4) << "a warm-up and three timed runs";
  runs = 0;
  EXPECT_GE(slm::host::best_time(run, -1.0), 0.0);
  EXPECT_EQ(runs, 1) << "past the limit: the warm-up's time alone";
}
