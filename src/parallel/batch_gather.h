// parallel/batch_gather.h: data parallelism for a loss over the whole global batch (contrastive
// tuning's in-batch negatives), as opposed to a sum of per-example losses.
// Owns: gather_rows (an autograd function) and sum_gradients. Every rank gathers all ranks'
// embeddings and computes the same global loss; the gradient of a rank's own rows is then exact
// on that rank (it includes their part as other ranks' negatives), so parameter gradients summed
// over the ranks are the single-process gradient of the global loss.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "comm/group.h"

namespace slm::parallel {

// fwd: all-gather of every rank's rows (same row count on each) in rank order -> (size * n, ...);
// bwd: this rank's rows of the gradient, no communication (every rank's loss is the same).
// The group must outlive the backward pass. Identity on a group of size 1.
at::Tensor gather_rows(const at::Tensor& local, const comm::Group& g);

// In place: every parameter's .grad() = the sum over g of the ranks' gradients (one flat
// all-reduce). Parameters without a gradient count as zeros.
void sum_gradients(const std::vector<at::Tensor>& params, const comm::Group& g);

}  // namespace slm::parallel
