// train/step_graph.h: a training step's forward and backward as one CUDA graph
// (system.cuda_graphs = "on"): after kWarmupSteps eager steps (cuBLAS workspaces, the attention
// kernel's measurement, the allocator's first blocks), the step's action list is captured once and
// then replayed, so that the hundreds of kernel launches of a step cost one. Each step's batches
// are copied into the graph's static input buffers; the loss comes out in the graph's static
// tensor and the gradients in the flat buffer, which is static anyway. The norm, clipping and the
// optimizer run after the replay, outside the graph (device_update.h: no host sync). The loss's
// factor (its weight times the loss scale) is baked into the graph: where the loss scale changes
// (fp16), the step is captured anew (rare: an overflow, or every growth interval). A step whose
// shapes differ from the captured ones runs eagerly; a capture that fails is said in one log line,
// and the run goes on eagerly.
// Owns: GraphFacts, graph_blocker and graphs_apply (whether a run can use graphs and why not:
// host logic, tested on the CPU), StepGraph and run_graphed (the capture and replay: CUDA builds).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/pipeline/executor.h"

namespace slm::train {

// What decides whether a step can be captured.
struct GraphFacts {
  std::string device;                 // "cpu" | "cuda"
  bool cuda_build = false;            // a CUDA build (a CUDA LibTorch and nvcc: model::own_cuda_kernels_built)
  int64_t pp = 1, tp = 1, dp = 1;     // the plan's degrees (dp: this rank's data-parallel group)
  double dropout = 0;                 // model.dropout
  bool recompute = false;             // model.recompute
  bool update_on_device = false;      // the step's end reads nothing before the update (device_update.h)
};
// "" where a step can be captured, else the reason (one phrase, for the log and errors).
std::string graph_blocker(const GraphFacts& f);
// Whether a run captures its steps: "on" where graph_blocker has nothing (UserError naming the
// blocker otherwise), "off" never.
bool graphs_apply(const std::string& setting, const GraphFacts& f);

constexpr int64_t kWarmupSteps = 2;  // eager steps before the capture

struct StepGraph;  // the captured graph, its static buffers and state (CUDA builds)
std::shared_ptr<StepGraph> make_step_graph();

using RunSchedule = std::function<parallel::pipeline::ScheduleResult(const std::vector<parallel::pipeline::MicroBatch>&)>;
// The step's schedule (`run`: run_actions over the given batches with the loss's factor `factor`,
// under autocast) through the graph: eager during warm-up, for other shapes, and after a failed
// capture; captured anew where `factor` differs from the captured one; else replayed. `log` takes
// the line the first capture or a failure says.
parallel::pipeline::ScheduleResult run_graphed(StepGraph& g, const RunSchedule& run,
                                               const std::vector<parallel::pipeline::MicroBatch>& batches,
                                               double factor, const std::function<void(const std::string&)>& log);

}  // namespace slm::train
