// tests/train/step_graph_test.cpp: when a step can be captured as a CUDA graph (train/step_graph.h)
// and what the log ("auto") and the error ("on") say where it cannot: every blocker, each on its
// own; run_graphed's control flow over a stand-in device and groups (warm-up, capture, replay, a
// failed capture here or on another rank, the replays' bytes per group, a replay that never ends).
// The capture and replay themselves run on a GPU only (bench/gpu/gpu_kernels.sh); graph_comm over
// real ranks in tests/tools/dist_check.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "comm/collectives.h"

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
      {[](GraphFacts& f) { f.pp = 2, f.backend = "gloo"; }, "pipeline stages over Gloo"},
      {[](GraphFacts& f) { f.pp = 2, f.tp = 2, f.dp = 2, f.backend = "gloo"; }, "pipeline stages over Gloo"},
      {[](GraphFacts& f) { f.tp = 2, f.backend = "gloo"; }, "tensor parallelism over Gloo"},
      {[](GraphFacts& f) { f.dp = 4, f.tp = 2, f.backend = "gloo"; }, "tensor parallelism over Gloo"},
      {[](GraphFacts& f) { f.dp = 4, f.backend = "gloo"; }, "data parallelism over Gloo"},
      {[](GraphFacts& f) { f.dp = 4, f.dp_wan = true; }, "WAN-aware all-reduce"},
      {[](GraphFacts& f) { f.dp = 4, f.zero = 3; }, "ZeRO 3"},
      {[](GraphFacts& f) { f.zero = 3; }, "ZeRO 3"},  // one GPU: its blocks rerun in backward all the same
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

// Pipeline, data and tensor parallelism over NCCL are captured with ZeRO 0-2, each alone and
// together, but only where asked for ("on"): they have not run on several GPUs yet.
TEST(StepGraph, PipelineDataAndTensorParallelismOverNcclAreCapturedWhenAskedFor) {
  struct Case {
    int64_t pp, dp, tp, zero;
  };
  for (const Case& c : std::vector<Case>{{1, 2, 1, 0}, {1, 2, 1, 1}, {1, 2, 1, 2}, {1, 1, 2, 0}, {1, 2, 2, 2},
                                         {1, 4, 2, 1}, {2, 1, 1, 0}, {4, 2, 1, 1}, {2, 2, 2, 2}}) {
    GraphFacts f = capturable();
    f.pp = c.pp, f.dp = c.dp, f.tp = c.tp, f.zero = c.zero;
    const std::string at = fmt::format("pp {} dp {} tp {} zero {}", c.pp, c.dp, c.tp, c.zero);
    EXPECT_EQ(graph_blocker(f), "") << at;
    EXPECT_TRUE(graphs_apply("on", f)) << at;
    std::string why;
    EXPECT_FALSE(graphs_apply("auto", f, &why)) << at;
    EXPECT_NE(why.find("several GPUs"), std::string::npos) << why;
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

// A step whose shapes differ from the captured ones cannot run eagerly where the graph holds
// collectives (the other ranks would replay theirs): an error, not a hang.
TEST(StepGraph, AnotherShapeIsAnErrorWhereTheGraphHoldsCollectives) {
  const BatchShapes big = {{4, 64}, {4, 64}}, small = {{2, 64}, {2, 64}};
  GraphBook b;
  b.warm_up_steps = kWarmupSteps, b.captured = true, b.collective = true, b.shapes = big;
  EXPECT_EQ(next_graph_step(b, big), GraphStep::replay);
  EXPECT_THROW(next_graph_step(b, small), std::logic_error);
}

// What run_graphed asked of the stand-in device and group.
struct Seen {
  int eager_runs = 0, captures = 0, drops = 0, loads = 0, replays = 0;
  bool capture_ok = true, others_ok = true, finished = true;
  std::vector<int64_t> sent{0, 0};             // the groups' counters (tp, dp)
  std::vector<int64_t> capture_sends{100, 300};  // what a capture's collectives count on the host
  std::vector<std::string> lines;
};

// A device that "captures" by running the step once (as a capture records it; its collectives count
// their bytes), and replays by handing back its outputs.
GraphDevice stand_in_device(Seen& seen) {
  GraphDevice d;
  d.capture = [&seen](const DeviceStep& run, const std::vector<parallel::pipeline::MicroBatch>& b, std::string* why) {
    seen.captures += 1;
    run(b);
    for (size_t i = 0; i < seen.sent.size(); ++i) seen.sent[i] += seen.capture_sends[i];
    if (!seen.capture_ok) *why = "operation not permitted when stream is capturing\nmore";
    return seen.capture_ok;
  };
  d.drop = [&seen] { seen.drops += 1; };
  d.load = [&seen](const std::vector<parallel::pipeline::MicroBatch>&) { seen.loads += 1; };
  d.replay = [&seen] {
    seen.replays += 1;
    return std::vector<at::Tensor>{at::full({}, 7.0)};
  };
  d.finished = [&seen] { return seen.finished; };
  return d;
}

// Two groups, as tensor and data parallelism's.
GraphComm stand_in_groups(Seen& seen, double timeout_s = 5) {
  GraphComm c;
  c.what = "the groups' collectives";
  c.all = [&seen](bool mine) { return mine && seen.others_ok; };
  c.sent = [&seen] { return seen.sent; };
  c.add_sent = [&seen](const std::vector<int64_t>& n) {
    for (size_t i = 0; i < n.size(); ++i) seen.sent[i] += n[i];
  };
  c.timeout_s = timeout_s;
  c.timed_out = [] { throw comm::PeerLost("a replayed step did not finish"); };
  return c;
}

StepGraph stand_in_graph(Seen& seen, bool collective, bool speaks = true) {
  StepGraph g;
  g.device = stand_in_device(seen);
  if (collective) g.comm = stand_in_groups(seen);
  g.speaks = speaks;
  return g;
}

// Runs `steps` steps of 2 micro-batches of 4 x 8 through g; returns each step's first output.
std::vector<double> run_steps(StepGraph& g, Seen& seen, int steps) {
  const std::vector<parallel::pipeline::MicroBatch> batches(2, {at::zeros({4, 8}, at::kLong), at::zeros({4, 8}, at::kLong)});
  const DeviceStep run = [&seen](const std::vector<parallel::pipeline::MicroBatch>&) {
    seen.eager_runs += 1;
    return std::vector<at::Tensor>{at::full({}, 1.0)};
  };
  const auto log = [&seen](const std::string& line) { seen.lines.push_back(line); };
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(run_graphed(g, run, batches, log)[0].item<double>());
    await_replay(g);
  }
  return out;
}

TEST(StepGraph, OneGpuWarmsUpCapturesOnceAndReplays) {
  Seen seen;
  StepGraph g = stand_in_graph(seen, /*collective=*/false);
  EXPECT_EQ(run_steps(g, seen, 5), (std::vector<double>{1, 1, 7, 7, 7}));  // the capture's step replays too
  EXPECT_EQ(seen.captures, 1);
  EXPECT_EQ(seen.eager_runs, kWarmupSteps + 1);  // the warm-up, and the capture's recording
  EXPECT_EQ(seen.loads, 2);                      // the capture copies its own batches
  EXPECT_EQ(seen.replays, 3);
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0], "cuda graphs: captured the step: forward, backward and update (2 micro-batch(es) of 4 x 8)");
}

TEST(StepGraph, AFailedCaptureSaysWhyInOneLineAndRunsEagerly) {
  Seen seen;
  seen.capture_ok = false;
  StepGraph g = stand_in_graph(seen, /*collective=*/false);
  EXPECT_EQ(run_steps(g, seen, 5), (std::vector<double>{1, 1, 1, 1, 1}));
  EXPECT_EQ(seen.captures, 1);
  EXPECT_EQ(seen.replays, 0);
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0],
            "cuda graphs: capture failed (operation not permitted when stream is capturing); the steps run eagerly");
}

// With collectives in the graph: the capture's bytes count once for its own step and again for
// each replay, group by group, as the eager steps count theirs.
TEST(StepGraph, ReplaysCountTheBytesTheCaptureCounted) {
  Seen seen;
  StepGraph g = stand_in_graph(seen, /*collective=*/true);
  run_steps(g, seen, 5);
  EXPECT_EQ(seen.replays, 3);
  EXPECT_EQ(g.book.replay_bytes, (std::vector<int64_t>{100, 300}));
  EXPECT_EQ(seen.sent, (std::vector<int64_t>{3 * 100, 3 * 300}));
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0], "cuda graphs: captured the step: forward, backward, the groups' collectives and update "
                           "(2 micro-batch(es) of 4 x 8)");
}

// Another rank's capture failed: this rank drops its graph and runs eagerly too (NCCL needs every
// rank to launch the collectives the same way); its capture's bytes were never sent.
TEST(StepGraph, AnotherRanksFailedCaptureKeepsEveryRankEager) {
  for (bool speaks : {true, false}) {
    Seen seen;
    seen.others_ok = false;
    StepGraph g = stand_in_graph(seen, /*collective=*/true, speaks);
    EXPECT_EQ(run_steps(g, seen, 4), (std::vector<double>{1, 1, 1, 1}));
    EXPECT_EQ(seen.drops, 1);
    EXPECT_EQ(seen.replays, 0);
    EXPECT_EQ(seen.sent, (std::vector<int64_t>{0, 0}));
    EXPECT_TRUE(g.book.failed);
    if (speaks) EXPECT_EQ(seen.lines, std::vector<std::string>{"cuda graphs: the capture failed on another rank; the steps run eagerly"});
    else EXPECT_TRUE(seen.lines.empty());
  }
}

// A replay that never finishes (a peer died inside it; c10d's watchdog does not watch captured
// collectives): the host gives up after the group's timeout instead of hanging.
TEST(StepGraph, AReplayThatNeverEndsTimesOut) {
  Seen seen;
  StepGraph g = stand_in_graph(seen, /*collective=*/true);
  g.comm.timeout_s = 0.05;
  run_steps(g, seen, 3);  // warm-up, capture and its replay
  seen.finished = false;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_steps(g, seen, 1), comm::PeerLost);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.05);
  EXPECT_LT(waited, 2.0);
}

// What the run says when a replay times out (comm::abandon, which graph_comm's timed_out calls).
TEST(StepGraph, AnAbandonedReplaySaysTheGroupsAndTheTimeout) {
  comm::Group dp, tp;
  dp.name = "dp", tp.name = "tp";
  const auto said = [](const std::vector<comm::Group>& groups) -> std::string {
    try {
      comm::abandon(groups, "a replayed step (CUDA graph)", 60);
    } catch (const comm::PeerLost& e) {
      return e.what();
    }
    return "abandon returned";
  };
  EXPECT_EQ(said({dp}),
            "a replayed step (CUDA graph) in group dp (1 ranks) did not finish within 60 s (dist.timeout_s); lost a peer");
  EXPECT_EQ(said({tp, dp}), "a replayed step (CUDA graph) in groups tp (1 ranks) and dp (1 ranks) did not finish "
                            "within 60 s (dist.timeout_s); lost a peer");
}

// One GPU's step holds no collectives: graph_comm gives nothing to agree on or count.
TEST(StepGraph, GraphCommOnOneRankHoldsNoCollectives) {
  const GraphComm c = graph_comm(comm::ProcessGroups{}, 60);
  EXPECT_FALSE(static_cast<bool>(c.all));
  EXPECT_TRUE(c.what.empty());
}

TEST(StepGraph, PollUntilReturnsAtOnceWhenReadyAndFalseAfterTheTimeout) {
  int polls = 0;
  EXPECT_TRUE(poll_until([&] { return ++polls >= 3; }, 5.0));
  EXPECT_EQ(polls, 3);
  EXPECT_FALSE(poll_until([] { return false; }, 0.02));
}

}  // namespace
}  // namespace slm::train
