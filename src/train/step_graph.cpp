// train/step_graph.cpp: see step_graph.h. Host code only: the CUDA graph itself is in
// cuda_graph_device.cpp.
#include "train/step_graph.h"

#include <torch/torch.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/collectives.h"
#include "util/error.h"
#include "util/wait_time.h"

namespace slm::train {

using parallel::pipeline::MicroBatch;

// What keeps the messages and collectives of pipeline, data and tensor parallelism out of a graph,
// "" where nothing does (graph_blocker's order).
static std::string collectives_blocker(const GraphFacts& f) {
  if (f.pp == 1 && f.dp == 1 && f.tp == 1) return "";
  if (f.backend != "nccl")
    return fmt::format("{} over Gloo: it copies CUDA tensors through the host (dist.backend = \"nccl\" is captured)",
                       f.pp > 1 ? "pipeline stages" : f.tp > 1 ? "tensor parallelism" : "data parallelism");
  if (f.dp_wan) return "the WAN-aware all-reduce (dist.wan) chains its collectives from the host";
  return "";
}

std::string graph_blocker(const GraphFacts& f) {
  if (f.device != "cuda") return "not a CUDA device";
  if (!f.cuda_build) return "this build has no CUDA graphs (it needs a CUDA LibTorch and nvcc)";
  if (std::string c = collectives_blocker(f); !c.empty()) return c;
  if (f.zero == 3) return "ZeRO 3 gathers, frees and reruns the blocks from the host";
  if (f.dropout > 0) return "dropout draws random numbers in the step";
  if (f.recompute) return "activation recomputation reruns the forward from the backward";
  if (!f.update_on_device) return "the step's end reads the gradient norm on the host (system.device_update)";
  if (f.traced) return "log.trace_steps waits for the device at every span of the traced steps";
  return "";
}

bool graphs_apply(const std::string& setting, const GraphFacts& f, std::string* why) {
  if (setting != "on" && setting != "auto") return false;
  std::string blocker = graph_blocker(f);
  if (blocker.empty() && setting == "auto" && (f.pp > 1 || f.dp > 1 || f.tp > 1))
    blocker = "graphs over several GPUs have not run yet (cuda_graphs = \"on\" takes them)";
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
    throw std::logic_error("cuda graphs: a step's micro-batch shapes changed under pipeline, data or tensor "
                           "parallelism (the other ranks would replay their collectives); set "
                           "system.cuda_graphs = \"off\"");
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

// a - b, group by group.
std::vector<int64_t> minus(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
  return a;
}

// The first step after the warm-up: captured (on every rank, where the graph holds collectives:
// they agree, and all replay or none), then replayed for this step's batches; eagerly where a
// capture failed.
std::vector<at::Tensor> capture_step(StepGraph& g, const DeviceStep& run, const std::vector<MicroBatch>& batches,
                                     const std::function<void(const std::string&)>& log) {
  const bool collective = static_cast<bool>(g.comm.all);
  const std::vector<int64_t> before = collective ? g.comm.sent() : std::vector<int64_t>{};
  std::string why;
  const bool mine = g.device.capture(run, batches, &why);
  // Before the agreement's own bytes.
  const std::vector<int64_t> counted = collective ? minus(g.comm.sent(), before) : std::vector<int64_t>{};
  const bool ok = collective ? g.comm.all(mine) : mine;
  g.book.collective = collective;
  record_graph_step(g.book, GraphStep::capture, batch_shapes(batches), ok);
  if (!ok) {
    if (collective) g.comm.add_sent(minus(std::vector<int64_t>(counted.size(), 0), counted));  // not sent after all
    if (mine) g.device.drop();
    if (!mine) log(fmt::format("cuda graphs: capture failed ({}); the steps run eagerly", first_line(why)));
    else if (g.speaks) log("cuda graphs: the capture failed on another rank; the steps run eagerly");
    return run(batches);
  }
  g.book.replay_bytes = counted;
  if (g.speaks)
    log(fmt::format("cuda graphs: captured the step: forward, backward{} and update ({} micro-batch(es) of {} x {})",
                    collective ? ", " + g.comm.what : "", batches.size(), batches[0].x.size(0), batches[0].x.size(1)));
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
  const auto end = deadline_after(timeout_s);
  for (;;) {
    if (ready()) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

GraphComm graph_comm(const comm::ProcessGroups& pg, double timeout_s) {
  GraphComm c;
  std::vector<comm::Group> groups;
  std::vector<std::string> what;
  if (pg.pp.size > 1) groups.push_back(pg.pp), what.emplace_back("the stages' messages");
  if (pg.tp.size > 1) groups.push_back(pg.tp), what.emplace_back("tensor parallelism's collectives");
  if (pg.dp.size > 1) groups.push_back(pg.dp), what.emplace_back("the gradients' all-reduce");
  if (groups.empty()) return c;
  c.what = fmt::format("{}", fmt::join(what, ", "));
  c.all = [site = pg.site](bool ok) { return comm::sum(ok ? 0.0 : 1.0, site) == 0; };
  c.sent = [groups] {
    std::vector<int64_t> n;
    for (const comm::Group& g : groups) n.push_back(comm::bytes_sent(g));
    return n;
  };
  c.add_sent = [groups](const std::vector<int64_t>& n) {
    for (size_t i = 0; i < groups.size(); ++i) comm::count_sent(groups[i], n[i]);
  };
  c.timeout_s = timeout_s;
  c.timed_out = [groups, timeout_s] { comm::abandon(groups, "a replayed step (CUDA graph)", timeout_s); };
  return c;
}

std::shared_ptr<StepGraph> make_step_graph(GraphComm comm, bool speaks) {
  auto g = std::make_shared<StepGraph>();
  g->device = make_cuda_graph_device();
  g->comm = std::move(comm);
  g->speaks = speaks;
  return g;
}

}  // namespace slm::train
