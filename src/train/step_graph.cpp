// train/step_graph.cpp: see step_graph.h. Host code only: the CUDA graph itself is in
// cuda_graph_device.cpp.
#include "train/step_graph.h"

#include <torch/torch.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "util/error.h"

namespace slm::train {

using parallel::pipeline::MicroBatch;

// What keeps data parallelism out of a graph, "" where nothing does (graph_blocker's order).
static std::string dp_blocker(const GraphFacts& f) {
  if (f.dp == 1) return "";
  if (f.dp_backend != "nccl")
    return "data parallelism over Gloo copies CUDA tensors through the host (dist.backend = \"nccl\" is captured)";
  if (f.dp_wan) return "the WAN-aware all-reduce (dist.wan) chains its collectives from the host";
  if (f.zero == 3) return "ZeRO 3 gathers and frees the parameters from the host";
  return "";
}

std::string graph_blocker(const GraphFacts& f) {
  if (f.device != "cuda") return "not a CUDA device";
  if (!f.cuda_build) return "this build has no CUDA graphs (it needs a CUDA LibTorch and nvcc)";
  if (f.pp > 1) return "pipeline stages exchange activations from the host";
  if (f.tp > 1) return "tensor parallelism's collectives run inside the model";
  if (std::string dp = dp_blocker(f); !dp.empty()) return dp;
  if (f.dropout > 0) return "dropout draws random numbers in the step";
  if (f.recompute) return "activation recomputation reruns the forward from the backward";
  if (!f.update_on_device) return "the step's end reads the gradient norm on the host (system.device_update)";
  if (f.traced) return "log.trace_steps waits for the device at every span of the traced steps";
  return "";
}

bool graphs_apply(const std::string& setting, const GraphFacts& f, std::string* why) {
  if (setting != "on" && setting != "auto") return false;
  std::string blocker = graph_blocker(f);
  if (blocker.empty() && setting == "auto" && f.dp > 1)
    blocker = "graphs with data parallelism have not run on several GPUs yet (cuda_graphs = \"on\" takes them)";
  if (blocker.empty()) return true;
  if (setting == "on") throw UserError("system: cuda_graphs = \"on\" is not possible here: " + blocker);
  if (why) *why = blocker;
  return false;
}

BatchShapes batch_shapes(const std::vector<MicroBatch>& batches) {
  BatchShapes out;
  for (const MicroBatch& b : batches) out.push_back(b.x.sizes().vec()), out.push_back(b.y.sizes().vec());
  return out;
}

GraphStep next_graph_step(const GraphBook& b, const BatchShapes& shapes) {
  if (b.failed || b.warm_up_steps < kWarmupSteps) return GraphStep::warm_up;
  if (!b.captured) return GraphStep::capture;
  if (shapes == b.shapes) return GraphStep::replay;
  if (b.collective)
    throw std::logic_error("cuda graphs: a step's micro-batch shapes changed under data parallelism (the other "
                           "ranks would replay their collectives); set system.cuda_graphs = \"off\"");
  return GraphStep::eager;
}

void record_graph_step(GraphBook& b, GraphStep step, const BatchShapes& shapes, bool ok) {
  if (step == GraphStep::warm_up) b.warm_up_steps += 1;
  if (step != GraphStep::capture) return;
  b.failed = !ok, b.captured = ok;
  if (ok) b.shapes = shapes;
}

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The first step after the warm-up: captured (on every rank, where the graph holds collectives:
// they agree, and all replay or none), then replayed for this step's batches; eagerly where a
// capture failed.
std::vector<at::Tensor> capture_step(StepGraph& g, const DeviceStep& run, const std::vector<MicroBatch>& batches,
                                     const std::function<void(const std::string&)>& log) {
  const bool collective = static_cast<bool>(g.comm.all);
  const int64_t before = collective ? g.comm.sent() : 0;
  std::string why;
  const bool mine = g.device.capture(run, batches, &why);
  const int64_t counted = collective ? g.comm.sent() - before : 0;  // before the agreement's own bytes
  const bool ok = collective ? g.comm.all(mine) : mine;
  g.book.collective = collective;
  record_graph_step(g.book, GraphStep::capture, batch_shapes(batches), ok);
  if (!ok) {
    if (collective) g.comm.add_sent(-counted);  // nothing of it was sent
    if (mine) g.device.drop();
    if (!mine) log(fmt::format("cuda graphs: capture failed ({}); the steps run eagerly", first_line(why)));
    else if (g.speaks) log("cuda graphs: the capture failed on another rank; the steps run eagerly");
    return run(batches);
  }
  g.book.replay_bytes = counted;
  if (g.speaks)
    log(fmt::format("cuda graphs: captured the step: forward, backward{} and update ({} micro-batch(es) of {} x {})",
                    collective ? ", the gradients' all-reduce" : "", batches.size(), batches[0].x.size(0),
                    batches[0].x.size(1)));
  g.awaiting = collective;
  return g.device.replay();
}

}  // namespace

std::vector<at::Tensor> run_graphed(StepGraph& g, const DeviceStep& run, const std::vector<MicroBatch>& batches,
                                    const std::function<void(const std::string&)>& log) {
  const BatchShapes shapes = batch_shapes(batches);
  const GraphStep step = next_graph_step(g.book, shapes);
  if (step == GraphStep::capture) return capture_step(g, run, batches, log);
  record_graph_step(g.book, step, shapes);
  if (step != GraphStep::replay) return run(batches);
  g.device.load(batches);
  if (g.book.collective) g.comm.add_sent(g.book.replay_bytes), g.awaiting = true;
  return g.device.replay();
}

void await_replay(StepGraph& g) {
  if (!g.awaiting) return;
  g.awaiting = false;
  if (!poll_until(g.device.finished, g.comm.timeout_s)) g.comm.timed_out();
}

bool poll_until(const std::function<bool()>& ready, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    if (ready()) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::shared_ptr<StepGraph> make_step_graph(GraphComm comm, bool speaks) {
  auto g = std::make_shared<StepGraph>();
  g->device = make_cuda_graph_device();
  g->comm = std::move(comm);
  g->speaks = speaks;
  return g;
}

}  // namespace slm::train
