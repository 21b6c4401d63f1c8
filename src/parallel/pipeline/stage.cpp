// parallel/pipeline/stage.cpp: see stage.h.
#include "parallel/pipeline/stage.h"

#include <torch/torch.h>

#include "parallel/data_parallel.h"
#include "parallel/tensor/mappings.h"
#include "parallel/tensor/model.h"

namespace slm::parallel::pipeline {

bool holds_layer(const Plan& p, const RankRole& role, int64_t layer) {
  for (int k : role.stages) {
    const StagePlan& s = p.stages[static_cast<size_t>(k)];
    if (layer >= s.first && layer < s.end) return true;
  }
  return false;
}

std::vector<Chunk> split_pipeline(model::GPT2& m, const Plan& p, const RankRole& role) {
  const int last_stage = static_cast<int>(p.stages.size()) - 1;
  std::vector<Chunk> chunks;
  for (int k : role.stages) {
    const StagePlan& s = p.stages[static_cast<size_t>(k)];
    Chunk c{k, 0, 0, k == 0, k == last_stage};
    while (c.begin < m.layer_ids.size() && m.layer_ids[c.begin] < s.first) ++c.begin;
    c.end = c.begin;
    while (c.end < m.layer_ids.size() && m.layer_ids[c.end] < s.end) ++c.end;
    chunks.push_back(c);
  }
  const bool first = chunks.front().first, last = chunks.back().last;
  if (last && !first) m.head = m.wte.detach().clone().requires_grad_(true);
  if (!first) m.wte = at::Tensor(), m.wpe = at::Tensor();
  if (!last) m.ln_f_w = at::Tensor(), m.ln_f_b = at::Tensor();
  return chunks;
}

at::Tensor chunk_forward(DataParallel& d, const model::GPT2& held, const Chunk& c, const at::Tensor& input,
                         const at::Tensor& targets, const comm::Group& tp, bool train,
                         const std::function<void()>& before_head) {
  if (c.first && c.last) return forward_loss(d, input, targets, train);
  // Sequence parallel: this rank's token rows inside the chunk; the activations between stages
  // stay whole (and equal on every tp rank), as without it.
  const bool sp = tp.size > 1 && sequence_parallel(d);
  model::GPT2 view;  // ZeRO 3: the chunk's parameters gathered around their use
  const model::GPT2& m =
      zero_stage(d) == 3 ? (view = zero3_model(d, {c.begin, c.first, c.last}, sp ? targets.size(1) : 0)) : held;
  at::Tensor x;
  if (tp.size > 1) {
    const tensor::TpSplit split(tp, sp ? targets.size(1) : 0, train);
    x = c.first ? tensor::embed(m, input, split) : sp ? tensor::split_rows(input, tp) : input;
    x = tensor::run_blocks(m, x, c.begin, c.end, split);
    if (!c.last) return sp ? tensor::gather_rows_whole(x, tp).view({targets.size(0), targets.size(1), -1}) : x;
    if (before_head) before_head();
    return tensor::head_loss(m, x, targets, split);
  }
  x = c.first ? model::embed(m, input, train) : input;
  x = model::run_blocks(m, x, c.begin, c.end, train);
  if (!c.last) return x;
  if (before_head) before_head();
  return model::head_loss(m, x, targets);
}

}  // namespace slm::parallel::pipeline
