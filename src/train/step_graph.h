// train/step_graph.h: a whole training step as one CUDA graph (system.cuda_graphs = "on" or "auto"): after
// kWarmupSteps eager steps (cuBLAS workspaces, the attention kernel's measurement, the allocator's
// first blocks), the step's device work is captured once and then replayed, so that the hundreds of
// kernel launches of a step cost one: zeroing the gradients, the forward and backward of every
// micro-batch, the gradient norm, clipping and the fused AdamW update with its overflow skip
// (device_update.h), which reads the learning rate and the update's number from device tensors
// written before each replay, as are the loss's factor and the gradients' unscaling (fp16's loss
// scale changes without a new capture). Each step's batches are copied into the graph's static
// input buffers; the loss and the squared norm come out in its static output tensors, parameters,
// moments and gradients stay in their flat buffers, static anyway. A step whose shapes differ from
// the captured ones runs eagerly; a capture that fails is said in one log line, and the run goes on
// eagerly.
// Owns: GraphFacts, graph_blocker and graphs_apply (whether a run can use graphs and why not),
// GraphBook, next_graph_step and record_graph_step (which way each step goes): host logic, tested
// on the CPU; StepGraph and run_graphed (the capture and replay: CUDA builds).
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
  bool traced = false;                // log.trace_steps > 0 (its spans wait for the device)
};
// "" where a step can be captured, else the reason (one phrase, for the log and errors).
std::string graph_blocker(const GraphFacts& f);
// Whether a run captures its steps: "on" where graph_blocker has nothing (UserError naming the
// blocker otherwise), "auto" where it has nothing (the blocker in `why` otherwise), "off" never.
bool graphs_apply(const std::string& setting, const GraphFacts& f, std::string* why = nullptr);

constexpr int64_t kWarmupSteps = 2;  // eager steps before the capture

// The sizes of each micro-batch's inputs and targets: what a graph is captured for.
using BatchShapes = std::vector<std::vector<int64_t>>;
BatchShapes batch_shapes(const std::vector<parallel::pipeline::MicroBatch>& batches);

// Which way a step goes: eagerly as a warm-up (the first kWarmupSteps, and every step after a
// failed capture), captured (the first after the warm-up) and then replayed, or eagerly for a shape
// the graph was not captured for.
enum class GraphStep { warm_up, capture, replay, eager };
// What run_graphed knows of its graph.
struct GraphBook {
  int64_t warm_up_steps = 0;
  bool captured = false;  // a graph to replay
  bool failed = false;    // its capture failed: every step runs eagerly
  BatchShapes shapes;     // what it was captured for
};
GraphStep next_graph_step(const GraphBook& b, const BatchShapes& shapes);
// The book after `step`; `ok`: whether a capture succeeded.
void record_graph_step(GraphBook& b, GraphStep step, const BatchShapes& shapes, bool ok = true);

struct StepGraph;  // the captured graph, its static buffers and state (CUDA builds)
std::shared_ptr<StepGraph> make_step_graph();

// The device work of a step over the given batches; returns its outputs (device tensors: the loss
// and the squared gradient norm).
using DeviceStep = std::function<std::vector<at::Tensor>(const std::vector<parallel::pipeline::MicroBatch>&)>;
// `run` through the graph: eager during warm-up, for other shapes, and after a failed capture;
// else captured once and replayed, returning the graph's static outputs. `log` takes the line the
// capture or its failure says.
std::vector<at::Tensor> run_graphed(StepGraph& g, const DeviceStep& run,
                                    const std::vector<parallel::pipeline::MicroBatch>& batches,
                                    const std::function<void(const std::string&)>& log);

}  // namespace slm::train
