// train/cuda_graph_device.cpp: the device's part of a captured step (train/step_graph.h): a CUDA
// graph captured on a side stream, its static input buffers and outputs, and an event after each
// replay that says when it has finished. CUDA builds; elsewhere make_cuda_graph_device refuses.
#include <torch/torch.h>

#include <memory>
#include <stdexcept>

#include "train/step_graph.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace slm::train {

using parallel::pipeline::MicroBatch;

#ifdef SLM_HAVE_CUDA_KERNELS

namespace {

struct CudaGraph {
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<MicroBatch> inputs;   // the static buffers the graph reads
  std::vector<at::Tensor> outputs;  // the static tensors it writes
  at::cuda::CUDAEvent replayed;     // recorded behind each replay
};

// `to` waits for the work queued on `from` so far.
void wait_for(const c10::cuda::CUDAStream& from, const c10::cuda::CUDAStream& to) {
  at::cuda::CUDAEvent done;
  done.record(from);
  done.block(to);
}

// Ends a capture that an exception interrupted and clears CUDA's error, so that the next kernel
// does not report the capture's error.
void abandon_capture(const c10::cuda::CUDAStream& side) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(side.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(side.stream(), &broken);
    if (broken) cudaGraphDestroy(broken);
  }
  cudaGetLastError();
}

void drop(CudaGraph& g) {
  if (g.graph) try {
      g.graph->reset();
    } catch (const std::exception&) {
    }
  g.graph.reset();
  g.inputs.clear();
  g.outputs.clear();
}

// Captures `run` over static copies of the batches on a side stream (capture needs one). False,
// with the reason in `why`, where capture failed; the stream is then out of capture and the graph
// dropped.
bool capture(CudaGraph& g, const DeviceStep& run, const std::vector<MicroBatch>& batches, std::string* why) {
  for (const MicroBatch& b : batches) g.inputs.push_back({b.x.clone(), b.y.clone()});
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
      abandon_capture(side);
      drop(g);
    }
  }
  wait_for(side, main);
  return ok;
}

}  // namespace

GraphDevice make_cuda_graph_device() {
  auto g = std::make_shared<CudaGraph>();
  GraphDevice d;
  d.capture = [g](const DeviceStep& run, const std::vector<MicroBatch>& batches, std::string* why) {
    return capture(*g, run, batches, why);
  };
  d.drop = [g] { drop(*g); };
  d.load = [g](const std::vector<MicroBatch>& batches) {
    for (size_t i = 0; i < batches.size(); ++i) {
      g->inputs[i].x.copy_(batches[i].x, /*non_blocking=*/true);
      g->inputs[i].y.copy_(batches[i].y, /*non_blocking=*/true);
    }
  };
  d.replay = [g] {
    g->graph->replay();
    g->replayed.record(c10::cuda::getCurrentCUDAStream());
    return g->outputs;
  };
  d.finished = [g] { return g->replayed.query(); };
  return d;
}

#else

GraphDevice make_cuda_graph_device() {
  throw std::logic_error("cuda graphs: this build has none (graphs_apply never says yes here)");
}

#endif

}  // namespace slm::train
