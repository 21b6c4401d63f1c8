// train/step_graph.h: a whole training step as one CUDA graph (system.cuda_graphs = "on" or "auto"): after
// kWarmupSteps eager steps (cuBLAS workspaces, the attention kernel's measurement, the allocator's
// first blocks, NCCL's communicators), the step's device work is captured once and then replayed,
// so that the hundreds of kernel launches of a step cost one: zeroing the gradients, the forward and
// backward of every micro-batch, the messages and collectives of the layout (NCCL captures them), the
// gradient norm, clipping and the fused AdamW update with its overflow skip (device_update.h), which
// reads the learning rate and the update's number from device tensors written before each replay,
// as are the loss's factor and the gradients' unscaling (fp16's loss scale changes without a new
// capture). Each step's batches are copied into the graph's static input buffers; the loss and the
// squared norm come out in its static output tensors, parameters, moments and gradients stay in
// their flat buffers, static anyway. A capture that fails is said in one log line, and the run goes
// on eagerly.
// With pipeline, data or tensor parallelism the graph holds messages and collectives (the stages'
// activations, gradients, tied weights and norms; the gradients' all-reduces; tensor parallelism's
// all-reduces, all-gathers and reduce-scatters inside the model and the loss), and NCCL requires
// every rank of a communicator to launch them the same way: the ranks agree on the capture (all
// replay, or all run eagerly), a step of other shapes is an error rather than a hang, a replay's
// bytes are counted on the host, group by group, as its capture counted them, and the host waits
// for a replay at most dist.timeout_s (c10d's watchdog does not watch captured work) before it
// aborts the groups and says which peer is lost.
// Owns: GraphFacts, graph_blocker and graphs_apply (whether a run can use graphs and why not);
// GraphBook, next_graph_step and record_graph_step (which way each step goes); GraphComm and
// graph_comm (the groups' part), GraphDevice (the device's part: a CUDA graph,
// make_cuda_graph_device in cuda_graph_device.cpp; a stand-in in tests), StepGraph, run_graphed and await_replay: the
// control flow, host code tested on the CPU.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "parallel/pipeline/executor.h"

namespace slm::train {

// What decides whether a step can be captured.
struct GraphFacts {
  std::string device;                 // "cpu" | "cuda"
  bool cuda_build = false;            // a CUDA build (a CUDA LibTorch and nvcc: model::own_cuda_kernels_built)
  int64_t pp = 1, tp = 1, dp = 1;     // the plan's degrees (dp: this rank's data-parallel group)
  std::string backend = "nccl";       // the job's backend: its pp, tp and dp groups'
  bool dp_wan = false;                // the dp group takes the WAN-aware all-reduce (dist.wan)
  int64_t zero = 0;                   // parallel.zero
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
// the graph was not captured for (std::logic_error where the graph holds collectives: the other
// ranks would replay theirs; the plan fixes every step's shapes, so this is a bug).
enum class GraphStep { warm_up, capture, replay, eager };
// What run_graphed knows of its graph.
struct GraphBook {
  int64_t warm_up_steps = 0;
  bool captured = false;    // a graph to replay
  bool failed = false;      // its capture failed (here or on another rank): every step runs eagerly
  bool collective = false;  // the graph holds collectives (GraphComm)
  BatchShapes shapes;       // what it was captured for
  std::vector<int64_t> replay_bytes;  // what the capture counted as sent, per group: what each replay sends
};
GraphStep next_graph_step(const GraphBook& b, const BatchShapes& shapes);
// The book after `step`; `ok`: whether the capture succeeded (on every rank).
void record_graph_step(GraphBook& b, GraphStep step, const BatchShapes& shapes, bool ok = true);

// The device work of a step over the given batches; returns its outputs (device tensors: the loss
// and the squared gradient norm).
using DeviceStep = std::function<std::vector<at::Tensor>(const std::vector<parallel::pipeline::MicroBatch>&)>;

// Where the step's messages and collectives are captured with it (pipeline, data or tensor
// parallelism over NCCL): the groups they run in. Empty (no `all`) on one GPU.
struct GraphComm {
  std::string what;                       // what they are, for the log ("the gradients' all-reduce")
  std::function<bool(bool)> all;          // whether every rank says true (an eager collective)
  std::function<std::vector<int64_t>()> sent;  // each group's bytes sent so far (comm::bytes_sent)
  std::function<void(const std::vector<int64_t>&)> add_sent;  // counts bytes a replay sent, per group
                                                              // (or takes back a failed capture's)
  double timeout_s = 0;                   // how long a replay may take (dist.timeout_s)
  std::function<void()> timed_out;        // a replay took longer: aborts the groups, throws comm::PeerLost
};
// The messages and collectives of a step over this rank's pipeline, tensor and data parallelism
// groups (pg.pp, pg.tp, pg.dp; one of size 1 holds none, and where all are: an empty GraphComm).
// The ranks agree over pg.site: every rank whose work a graph here can wait for (the world; under
// DiLoCo this rank's site).
GraphComm graph_comm(const comm::ProcessGroups& pg, double timeout_s);

// The device's part of a graph.
struct GraphDevice {
  // Captures `run` over static copies of the batches; false, with the reason in `why`, where the
  // capture failed (nothing is then kept).
  std::function<bool(const DeviceStep& run, const std::vector<parallel::pipeline::MicroBatch>&, std::string* why)>
      capture;
  std::function<void()> drop;  // releases a captured graph (another rank's capture failed)
  std::function<void(const std::vector<parallel::pipeline::MicroBatch>&)> load;  // into the static inputs
  std::function<std::vector<at::Tensor>()> replay;  // launches the graph; its static outputs
  std::function<bool()> finished;  // whether the work launched so far has finished (never blocks)
};
// A CUDA graph on the current device (CUDA builds; elsewhere std::logic_error: graphs_apply never
// says yes there).
GraphDevice make_cuda_graph_device();

struct StepGraph {
  GraphBook book;
  GraphDevice device;
  GraphComm comm;
  bool speaks = true;          // says what every rank would say (the capture, another rank's failure)
  bool awaiting = false;       // a replay with collectives whose end await_replay has not seen
};
// A graph for this rank's steps on the current CUDA device.
std::shared_ptr<StepGraph> make_step_graph(GraphComm comm, bool speaks);

// `run` through the graph: eager during warm-up, and after a failed capture; else captured once
// and replayed, returning the graph's static outputs. `log` takes the lines this rank says.
std::vector<at::Tensor> run_graphed(StepGraph& g, const DeviceStep& run,
                                    const std::vector<parallel::pipeline::MicroBatch>& batches,
                                    const std::function<void(const std::string&)>& log);
// Before the host reads a replay's outputs where the graph holds collectives: waits until the
// replay has finished, at most comm.timeout_s (then comm.timed_out()). A no-op otherwise.
void await_replay(StepGraph& g);
// Polls `ready` until it says true (true) or `timeout_s` have passed (false), sleeping a little
// between polls.
bool poll_until(const std::function<bool()>& ready, double timeout_s);

}  // namespace slm::train
