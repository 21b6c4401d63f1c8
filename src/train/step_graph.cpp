// train/step_graph.cpp: see step_graph.h.
#include "train/step_graph.h"

#include <torch/torch.h>

#include <fmt/format.h>

#include "util/error.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace slm::train {

using parallel::pipeline::MicroBatch;

std::string graph_blocker(const GraphFacts& f) {
  if (f.device != "cuda") return "not a CUDA device";
  if (!f.cuda_build) return "this build has no CUDA graphs (it needs a CUDA LibTorch and nvcc)";
  if (f.pp > 1) return "pipeline stages exchange activations from the host";
  if (f.tp > 1) return "tensor parallelism's collectives run inside the model";
  if (f.dp > 1) return "data parallelism's gradient hooks launch collectives from the host";
  if (f.dropout > 0) return "dropout draws random numbers in the step";
  if (f.recompute) return "activation recomputation reruns the forward from the backward";
  if (!f.update_on_device) return "the step's end reads the gradient norm on the host (system.device_update)";
  if (f.traced) return "log.trace_steps waits for the device at every span of the traced steps";
  return "";
}

BatchShapes batch_shapes(const std::vector<MicroBatch>& batches) {
  BatchShapes out;
  for (const MicroBatch& b : batches) out.push_back(b.x.sizes().vec()), out.push_back(b.y.sizes().vec());
  return out;
}

GraphStep next_graph_step(const GraphBook& b, const BatchShapes& shapes) {
  if (b.failed || b.warm_up_steps < kWarmupSteps) return GraphStep::warm_up;
  if (!b.captured) return GraphStep::capture;
  return shapes == b.shapes ? GraphStep::replay : GraphStep::eager;
}

void record_graph_step(GraphBook& b, GraphStep step, const BatchShapes& shapes, bool ok) {
  if (step == GraphStep::warm_up) b.warm_up_steps += 1;
  if (step != GraphStep::capture) return;
  b.failed = !ok, b.captured = ok;
  if (ok) b.shapes = shapes;
}

bool graphs_apply(const std::string& setting, const GraphFacts& f, std::string* why) {
  if (setting != "on" && setting != "auto") return false;
  const std::string blocker = graph_blocker(f);
  if (blocker.empty()) return true;
  if (setting == "on") throw UserError("system: cuda_graphs = \"on\" is not possible here: " + blocker);
  if (why) *why = blocker;
  return false;
}

#ifdef SLM_HAVE_CUDA_KERNELS

struct StepGraph {
  GraphBook book;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<MicroBatch> inputs;   // the static buffers the graph reads
  std::vector<at::Tensor> outputs;  // the static tensors it writes
};

std::shared_ptr<StepGraph> make_step_graph() { return std::make_shared<StepGraph>(); }

namespace {

// `to` waits for the work queued on `from` so far.
void wait_for(const c10::cuda::CUDAStream& from, const c10::cuda::CUDAStream& to) {
  at::cuda::CUDAEvent done;
  done.record(from);
  done.block(to);
}

// Captures `run` over g.inputs on a side stream (capture needs one). False, with the reason in
// `why`, where capture failed; the stream is then out of capture and the graph dropped.
bool capture(StepGraph& g, const DeviceStep& run, std::string* why) {
  const c10::cuda::CUDAStream main = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  wait_for(main, side);
  bool ok = true;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    g.graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      g.graph->capture_begin();
      g.outputs = run(g.inputs);
      g.graph->capture_end();
    } catch (const std::exception& e) {
      *why = e.what();
      ok = false;
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(side.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(side.stream(), &broken);
        if (broken) cudaGraphDestroy(broken);
      }
      cudaGetLastError();  // the capture's error is not the next kernel's
      try {
        g.graph->reset();
      } catch (const std::exception&) {
      }
      g.graph.reset();
      g.outputs.clear();
    }
  }
  wait_for(side, main);
  return ok;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::vector<at::Tensor> run_graphed(StepGraph& g, const DeviceStep& run, const std::vector<MicroBatch>& batches,
                                    const std::function<void(const std::string&)>& log) {
  const BatchShapes shapes = batch_shapes(batches);
  const GraphStep step = next_graph_step(g.book, shapes);
  if (step == GraphStep::warm_up || step == GraphStep::eager) {
    record_graph_step(g.book, step, shapes);
    return run(batches);
  }
  if (step == GraphStep::capture) {
    for (const MicroBatch& b : batches) g.inputs.push_back({b.x.clone(), b.y.clone()});
    std::string why;
    const bool ok = capture(g, run, &why);
    record_graph_step(g.book, step, shapes, ok);
    if (!ok) {
      g.inputs.clear();
      log(fmt::format("cuda graphs: capture failed ({}); the steps run eagerly", first_line(why)));
      return run(batches);
    }
    log(fmt::format("cuda graphs: captured the step: forward, backward and update ({} micro-batch(es) of {} x {})",
                    batches.size(), batches[0].x.size(0), batches[0].x.size(1)));
  } else {
    for (size_t i = 0; i < batches.size(); ++i) {
      g.inputs[i].x.copy_(batches[i].x, /*non_blocking=*/true);
      g.inputs[i].y.copy_(batches[i].y, /*non_blocking=*/true);
    }
  }
  g.graph->replay();
  return g.outputs;
}

#else

struct StepGraph {};
std::shared_ptr<StepGraph> make_step_graph() { return std::make_shared<StepGraph>(); }
std::vector<at::Tensor> run_graphed(StepGraph&, const DeviceStep& run, const std::vector<MicroBatch>& batches,
                                    const std::function<void(const std::string&)>&) {
  return run(batches);  // graphs_apply never says yes in this build
}

#endif

}  // namespace slm::train
