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
  int64_t eager_steps = 0, captures = 0;  // captures: the first and those after loss-scale changes
  double factor = 0;  // the loss's factor the graph bakes in
  bool failed = false;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<MicroBatch> inputs;   // the static buffers the graph reads
  std::vector<at::Tensor> outputs;  // the static tensors it writes
};

std::shared_ptr<StepGraph> make_step_graph() { return std::make_shared<StepGraph>(); }

namespace {

bool same_shapes(const std::vector<MicroBatch>& a, const std::vector<MicroBatch>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].x.sizes() != b[i].x.sizes() || a[i].y.sizes() != b[i].y.sizes()) return false;
  return true;
}

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
                                    double factor, const std::function<void(const std::string&)>& log) {
  if (g.failed || g.eager_steps < kWarmupSteps) {
    g.eager_steps += 1;
    return run(batches);
  }
  if (g.graph && factor != g.factor) {  // a new loss scale: the old graph goes, a new one is captured
    g.graph.reset();
    g.inputs.clear();
    g.outputs.clear();
  }
  if (!g.graph) {
    for (const MicroBatch& b : batches) g.inputs.push_back({b.x.clone(), b.y.clone()});
    std::string why;
    if (!capture(g, run, &why)) {
      g.failed = true;
      g.inputs.clear();
      log(fmt::format("cuda graphs: capture failed ({}); the steps run eagerly", first_line(why)));
      return run(batches);
    }
    g.factor = factor;
    if (++g.captures == 1)
      log(fmt::format("cuda graphs: captured the step: forward, backward and update ({} micro-batch(es) of {} x {})",
                      batches.size(), batches[0].x.size(0), batches[0].x.size(1)));
  } else if (!same_shapes(batches, g.inputs)) {
    return run(batches);
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
std::vector<at::Tensor> run_graphed(StepGraph&, const DeviceStep& run, const std::vector<MicroBatch>& batches, double,
                                    const std::function<void(const std::string&)>&) {
  return run(batches);  // graphs_apply never says yes in this build
}

#endif

}  // namespace slm::train
