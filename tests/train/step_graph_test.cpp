// tests/train/step_graph_test.cpp: when a step can be captured as a CUDA graph (train/step_graph.h)
// and what the log ("auto") and the error ("on") say where it cannot: every blocker, each on its own. The capture
// and replay themselves run on a GPU only (bench/gpu/gpu_kernels.sh).
#include <gtest/gtest.h>

#include "train/step_graph.h"
#include "util/error.h"

namespace slm::train {
namespace {

GraphFacts capturable() {
  GraphFacts f;
  f.device = "cuda";
  f.cuda_build = true;
  f.update_on_device = true;
  return f;
}

TEST(StepGraph, OneGpuWithoutRandomnessOrHostReadsCanBeCaptured) {
  EXPECT_EQ(graph_blocker(capturable()), "");
  EXPECT_TRUE(graphs_apply("on", capturable()));
  std::string why = "unchanged";
  EXPECT_TRUE(graphs_apply("auto", capturable(), &why));
  EXPECT_EQ(why, "unchanged");
  EXPECT_FALSE(graphs_apply("off", capturable()));
}

TEST(StepGraph, EachBlockerIsNamed) {
  const std::vector<std::pair<std::function<void(GraphFacts&)>, std::string>> cases = {
      {[](GraphFacts& f) { f.device = "cpu"; }, "not a CUDA device"},
      {[](GraphFacts& f) { f.cuda_build = false; }, "no CUDA graphs"},
      {[](GraphFacts& f) { f.pp = 2; }, "pipeline"},
      {[](GraphFacts& f) { f.tp = 2; }, "tensor parallelism"},
      {[](GraphFacts& f) { f.dp = 4; }, "data parallelism"},
      {[](GraphFacts& f) { f.dropout = 0.1; }, "dropout"},
      {[](GraphFacts& f) { f.recompute = true; }, "recomputation"},
      {[](GraphFacts& f) { f.update_on_device = false; }, "system.device_update"},
      {[](GraphFacts& f) { f.traced = true; }, "log.trace_steps"},
  };
  for (const auto& [change, want] : cases) {
    GraphFacts f = capturable();
    change(f);
    const std::string why = graph_blocker(f);
    EXPECT_NE(why.find(want), std::string::npos) << why;
    EXPECT_FALSE(graphs_apply("off", f));
    std::string auto_why;
    EXPECT_FALSE(graphs_apply("auto", f, &auto_why));  // "auto" goes on without: the reason for the log
    EXPECT_EQ(auto_why, why);
    try {
      graphs_apply("on", f);
      ADD_FAILURE() << "\"on\" with a blocker: " << want;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "system: cuda_graphs = \"on\" is not possible here: " + why);
    }
  }
}

}  // namespace
}  // namespace slm::train
