// parallel/data_parallel_impl.h: the state behind DataParallel, shared by data_parallel.cpp
// (DDP, ZeRO 1-2) and zero3.cpp (ZeRO 3). Private to parallel/.
#pragma once
#include <ATen/core/Tensor.h>

#include <deque>
#include <map>
#include <memory>

#include "comm/collectives.h"
#include "parallel/data_parallel.h"
#include "util/torch_compat.h"

namespace torch::autograd {
struct Node;
}

namespace slm::parallel {

struct Bucket {
  int64_t begin = 0, end = 0;   // flat range of its parameters
  std::vector<size_t> params;   // indices into the layout
  size_t ready = 0;             // gradients accumulated in this backward
  bool launched = false;
};

// ZeRO 3: a group of parameters gathered together (contiguous in the flat vector).
struct Unit {
  int64_t begin = 0, numel = 0;  // flat range
  int64_t piece = 0;             // elements each rank owns (numel / ranks, rounded up)
  int64_t local = 0;             // offset of this rank's piece in `own`
  int block = -1;                // block index, or -1 for embeddings / final LayerNorm
};

struct DataParallel {
  ParallelConfig cfg;
  comm::Group dp;
  comm::Group tp;                   // tensor-parallel group (size 1 without tp)
  comm::Group zg;                   // ZeRO 1-3: the ranks that split the state (dp, or dp's site)
  FlatLayout layout;
  std::vector<bool> replicated;     // per parameter: held whole by every tp rank
  model::GPT2* model = nullptr;
  ShardInfo shard;                  // ZeRO 0-2: the flat range this rank updates
  std::vector<at::Tensor> params;   // ZeRO 0-2: views of param_flat
  at::Tensor param_flat;            // (padded) ZeRO 0-2
  at::Tensor grad_flat;             // (padded) ZeRO 0-1: .grad of every parameter is a view of it
  at::Tensor grad_own;              // (shard.size) ZeRO 2: this rank's accumulated gradient
  std::vector<Bucket> buckets;      // in backward order (last parameters first)
  std::vector<size_t> bucket_of;    // parameter index -> bucket
  std::deque<comm::Pending> inflight;
  std::vector<at::Tensor> staging;  // ZeRO 2: two bucket-sized buffers, used in turn
  size_t next_staging = 0;
  bool last = true;                 // reducing in this backward
  std::vector<compat::NodePtr> accumulators;  // keep hooks alive
  // ZeRO 3
  std::vector<Unit> units;          // [embeddings], this rank's blocks in order, [final LayerNorm]
  int emb_unit = -1, lnf_unit = -1;  // their indices (-1: a pipeline stage without them)
  at::Tensor own;                   // (sum of pieces) leaf with requires_grad: this rank's pieces
  std::map<size_t, std::pair<at::Tensor, comm::Pending>> prefetched;  // unit -> gathered buffer
  std::vector<at::Tensor> buffers;  // unit-sized buffers for gathers and reductions, reused
  bool in_step = false;             // between zero_grads and finish_grads (a training step)
  std::map<size_t, at::Tensor> kept;  // embeddings / final LayerNorm gathered for the step: leaves
                                      // whose gradients add up over the micro-batches
};

// zero3.cpp
void setup_zero3(DataParallel& d, model::GPT2& m);
std::vector<Segment> zero3_segments(const DataParallel& d);
// The step's gathered embeddings and final LayerNorm: their gradients reduce-scattered into own's.
void reduce_kept_units(DataParallel& d);
at::Tensor zero3_tied_embedding(DataParallel& d);
void zero3_add_tied_embedding_grad(DataParallel& d, const at::Tensor& g);

}  // namespace slm::parallel
