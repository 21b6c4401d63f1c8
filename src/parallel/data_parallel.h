// parallel/data_parallel.h: data parallelism and ZeRO stages 1-3 over a dp group, as verbs that
// train_step calls in order: zero_grads, forward_loss and begin_backward (per micro-batch),
// finish_grads, grad_norm_sq, the optimizer on param_shard/grad_shard (train/optim), gather_params.
// Owns: DataParallel and its verbs (also for world = 1). Configured by parallel/config.h.
//  zero 0 (DDP): gradients are views of one flat buffer; autograd post-accumulate hooks launch an
//     async all-reduce per bucket (~bucket_mb, in backward order) as soon as its last gradient
//     is accumulated, on the last micro-batch only; every rank updates every parameter.
//  zero 1: same reduction; each rank updates only its shard (optimizer state 1/N), then the
//     parameters are all-gathered.
//  zero 2: every micro-batch, each completed bucket is copied to a staging buffer (two in
//     flight), its autograd gradients are freed, and it is reduced; each rank adds its part to
//     a shard-sized gradient buffer. Gradient memory: shard + two buckets instead of everything.
//  zero 3 (parallel/zero3.cpp): parameters sharded too. Units (embeddings, each block, final
//     LayerNorm: those of this rank's pipeline stage) are split evenly across ranks; a block's
//     parameters are all-gathered just before its forward (the next block's gather is prefetched)
//     and freed after it, gathered again in backward (prefetching the previous block) where the
//     block is recomputed, and its gradient is reduce-scattered straight to the owners. The
//     embeddings and final LayerNorm are gathered once per step and kept to its end (used at both
//     ends of every micro-batch: tied LM head); their gradients add up over the micro-batches and
//     are reduce-scattered in finish_grads. A pipeline's last stage keeps its copy of the tied
//     head whole (it is not a parameter there: pipeline/tied_embedding.h).
// Hybrid sharding (zero_scope = "site", with dist.ranks_per_site): the state is split over the
// ranks of each site and replicated across sites, like FSDP's HYBRID_SHARD / ZeRO++ hpZ. Gradients
// are still summed over the whole dp group (hierarchically: only a 1/L shard crosses sites), but
// parameter all-gathers (ZeRO 1-2 after the step, ZeRO 3 before each block) stay inside the site.
// Optimizer state per rank is 1/L of the model for L ranks per site instead of 1/dp.
// Gloo has no reduce-scatter in LibTorch 1.x: ZeRO-2 reduces a bucket with an all-reduce and keeps
// its own part (same bytes as DDP; the memory saving is what stage 2 buys).
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/group.h"
#include "model/gpt2.h"
#include "parallel/config.h"
#include "parallel/flat.h"

namespace slm::parallel {

struct DataParallel;  // data_parallel.cpp

// Flattens the model's parameters (they become views of one buffer; ZeRO 3: this rank keeps only
// its pieces and m's tensors are released), makes the buckets and registers the gradient hooks.
// m must outlive the result; all parameters on one device. With tp.size > 1, m already holds this
// rank's tensor-parallel slices (parallel/tensor/model.h): the forward pass and the gradient norm
// take the tp group into account; ZeRO 3 shards the tp slices over dp (parallel/zero3.cpp).
std::shared_ptr<DataParallel> apply_data_parallel(model::GPT2& m, const ParallelConfig& cfg, const comm::Group& dp,
                                                  const comm::Group& tp);

// Mean next-token loss of the model on idx/targets (B, T), whatever the stage.
at::Tensor forward_loss(DataParallel& d, const at::Tensor& idx, const at::Tensor& targets, bool train);

// ZeRO 3: the model as a forward pass over part of it runs it (a pipeline chunk from block h[begin],
// with the embeddings if `first`, the final LayerNorm if `last`): each block gathered around its
// use (run_block: a tp block where d has a tp group, `sp_seq_len` its sequence parallelism's T, 0 =
// off), the embeddings and final LayerNorm gathered once per training step (between zero_grads and
// finish_grads) or for this call outside one, the last stage's head as it is. The gather of
// h[begin] starts at once.
struct ModelPart {
  size_t begin = 0;
  bool first = true, last = true;
};
model::GPT2 zero3_model(DataParallel& d, const ModelPart& part, int64_t sp_seq_len);

// The token embedding (wte) as this step's forward passes use it (ZeRO 3: the step's gathered
// copy, or one gathered now outside a step), for a pipeline's tied head; and adding the head's
// gradient to its gradient in this step (before the final backward that uses wte).
at::Tensor tied_embedding(DataParallel& d);
void add_tied_embedding_grad(DataParallel& d, const at::Tensor& g);

void zero_grads(DataParallel& d);
// Before each micro-batch's backward; `last` = the optimizer step follows (DDP reduces then).
void begin_backward(DataParallel& d, bool last);
// Waits for every reduction and averages: afterwards grad_shard() holds the mean gradient.
void finish_grads(DataParallel& d);
// Squared L2 norm of the whole mean gradient: summed over the dp shards when sharded and over the
// tp slices, counting parameters that every tp rank holds once. Same value on every rank.
double grad_norm_sq(DataParallel& d);
// The same as a 0-dim double tensor on the gradients' device, without a host sync (the tp and ZeRO
// sums are all-reduces of that tensor).
at::Tensor grad_norm_sq_on_device(DataParallel& d);
// What this rank's optimizer updates, in place (padded flat ranges; padding stays zero).
at::Tensor param_shard(DataParallel& d);
at::Tensor grad_shard(DataParallel& d);
// ZeRO 0-2: this rank's whole flat parameter buffer (padded); its parameters are views of it.
// UserError for ZeRO 3 (parameters are gathered block by block there).
at::Tensor full_params(DataParallel& d);
// ZeRO 1/2: all-gather the updated shards into every rank's full parameters. No-op for DDP.
void gather_params(DataParallel& d);

const FlatLayout& layout(const DataParallel& d);
// Where the pieces of param_shard/grad_shard (and the optimizer's moments) sit in the flat vector.
std::vector<Segment> segments(const DataParallel& d);
int64_t zero_stage(const DataParallel& d);
// Whether the tp group splits the tokens between the linears (parallel.sequence_parallel with tp > 1).
bool sequence_parallel(const DataParallel& d);
// The ranks that split the ZeRO state: the dp group, or (zero_scope = "site") this rank's site of
// it; the other sites hold the same shards. dp itself for ZeRO 0.
const comm::Group& zero_group(const DataParallel& d);
// Bytes this rank holds for parameters and gradients (for the memory report).
int64_t param_bytes(const DataParallel& d);
int64_t grad_bytes(const DataParallel& d);

}  // namespace slm::parallel
