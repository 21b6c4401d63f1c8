// tests/train/step_graph_test.cpp: when a step can be captured as a CUDA graph (train/step_graph.h)
// and what the log ("auto") and the error ("on") say where it cannot: every blocker, each on its own. The capture
// and replay themselves run on a GPU only (bench/gpu/gpu_kernels.sh).
#include <gtest/gtest.h>

#include <utility>

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

// Steps through the book as run_graphed does: each step's way, then its record.
std::vector<GraphStep> walk(GraphBook& b, const std::vector<std::pair<BatchShapes, bool>>& steps) {
  std::vector<GraphStep> ways;
  for (const auto& [shapes, capture_ok] : steps) {
    ways.push_back(next_graph_step(b, shapes));
    record_graph_step(b, ways.back(), shapes, capture_ok);
  }
  return ways;
}

// Captured once, for the shapes of the first step after the warm-up (a new loss scale is a new
// value in the device scalars the graph reads, not a new capture: train/device_update.h).
TEST(StepGraph, WarmUpThenCaptureThenReplayAndAnotherShapeEagerly) {
  const BatchShapes big = {{4, 64}, {4, 64}}, small = {{2, 64}, {2, 64}};
  GraphBook b;
  using G = GraphStep;
  EXPECT_EQ(walk(b, {{big, true}, {big, true}, {big, true}, {big, true}, {small, true}, {big, true}, {small, true}}),
            (std::vector<G>{G::warm_up, G::warm_up, G::capture, G::replay, G::eager, G::replay, G::eager}));
  EXPECT_EQ(b.warm_up_steps, kWarmupSteps);
  EXPECT_TRUE(b.captured);
  EXPECT_EQ(b.shapes, big);
}

TEST(StepGraph, AFailedCaptureLeavesEveryLaterStepEager) {
  const BatchShapes big = {{4, 64}, {4, 64}};
  GraphBook b;
  using G = GraphStep;
  EXPECT_EQ(walk(b, {{big, true}, {big, true}, {big, false}, {big, true}, {big, true}}),
            (std::vector<G>{G::warm_up, G::warm_up, G::capture, G::warm_up, G::warm_up}));
  EXPECT_TRUE(b.failed);
  EXPECT_FALSE(b.captured);
}

}  // namespace
}  // namespace slm::train
