// tests/train/profiler_test.cpp: log.profile_steps' window (which steps a session profiles) and
// the profiler's trace of CPU operators (train/profiler.h), in either LibTorch.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <set>

#include "report/profile.h"
#include "train/profiler.h"

using namespace slm::train;

TEST(Profiler, WindowLeavesTheFirstThreeStepsOutWhereTheSessionIsLongEnough) {
  using W = std::pair<int64_t, int64_t>;
  EXPECT_EQ(profile_window(0, 100, 2), W(3, 5));    // steps 4-5
  EXPECT_EQ(profile_window(40, 100, 2), W(43, 45));  // a resumed session: its own first three
  EXPECT_EQ(profile_window(0, 4, 2), W(2, 4));      // steps 3-4: as late as the session allows
  EXPECT_EQ(profile_window(0, 2, 5), W(0, 2));      // shorter than asked: all of it
  EXPECT_EQ(profile_window(0, 100, 0), W(0, 0));    // off
  EXPECT_EQ(profile_window(10, 10, 3), W(0, 0));    // nothing to run
}

TEST(Profiler, TraceHasTheOperatorsRunWhileOnAndItsStepCount) {
  const at::Tensor a = torch::randn({64, 64});
  start_profiler(/*cuda=*/false);
  const at::Tensor b = torch::mm(a, a).relu();
  const nlohmann::json t = stop_profiler("test rank 0, steps 1-1", 1);
  torch::mm(b, b);  // after the stop: not recorded
  EXPECT_EQ(t["slm_profile"]["source"], "test rank 0, steps 1-1");
  EXPECT_EQ(t["slm_profile"]["steps"], 1);
  std::multiset<std::string> ops;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["cat"], "cpu_op");
    EXPECT_GE(e["ts"].get<double>(), 0);
    EXPECT_GE(e["dur"].get<double>(), 0);
    ops.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(ops.count("aten::mm"), 1u);
  EXPECT_EQ(ops.count("aten::relu"), 1u);
}

TEST(Profiler, OnAGpuItsKernelsAreInTheTraceByKind) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor a = torch::randn({512, 512}, torch::kCUDA);
  torch::cuda::synchronize();
  start_profiler(/*cuda=*/true);
  const at::Tensor b = torch::mm(a, a);
  torch::cuda::synchronize();
  const slm::report::ProfileSummary s = slm::report::summarize_profile(stop_profiler("gpu test", 1), "");
  ASSERT_TRUE(s.gpu) << "no GPU activity in the trace (CUPTI not found?)";
  ASSERT_FALSE(s.kinds.empty());
  EXPECT_EQ(s.kinds[0].name, "matmul") << s.top[0].name;
  EXPECT_GT(s.gpu_busy_ms, 0);
}
