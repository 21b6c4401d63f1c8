// parallel/pipeline/stage.h: a pipeline stage as a GPT2 holding some of the blocks.
// Owns: Chunk (one model chunk of this rank: a stage of the plan), holds_layer (for init_gpt2's
// filter), split_pipeline (drop what this rank does not hold; the last stage keeps a copy of the
// tied embedding as its head), chunk_forward (embeddings | blocks | head + loss, whole model when
// one chunk is both first and last), with or without tensor parallelism.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "comm/group.h"
#include "model/gpt2.h"
#include "parallel/plan.h"

namespace slm::parallel {
struct DataParallel;
}

namespace slm::parallel::pipeline {

struct Chunk {
  int stage = 0;               // index into plan.stages (virtual stage)
  size_t begin = 0, end = 0;   // its blocks: model.h[begin, end)
  bool first = false, last = false;  // holds the embeddings / the head and loss
};

bool holds_layer(const Plan& p, const RankRole& role, int64_t layer);
// In place (m holds exactly the blocks holds_layer allowed): drops wte/wpe unless this rank holds
// stage 0 and ln_f unless it holds the last stage; there, without stage 0, wte becomes `head` (a
// copy refreshed after every update, sync_tied_weights). Returns the chunks in chunk order.
std::vector<Chunk> split_pipeline(model::GPT2& m, const Plan& p, const RankRole& role);

// input: idx (B, T) for a first chunk, else activations (B, T, C). Returns activations (B, T, C),
// or the mean loss for a last chunk. `held`: this rank's model; a chunk that is the whole model
// goes through d's forward_loss, and under ZeRO 3 a chunk's parameters are gathered around their
// use (zero3_model). before_head: called in a last chunk right before the head is used (the
// executor takes the tied weights there).
at::Tensor chunk_forward(DataParallel& d, const model::GPT2& held, const Chunk& c, const at::Tensor& input,
                         const at::Tensor& targets, const comm::Group& tp, bool train,
                         const std::function<void()>& before_head = {});

}  // namespace slm::parallel::pipeline
