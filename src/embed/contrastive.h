// embed/contrastive.h: the in-batch-negatives contrastive loss (InfoNCE, as in SimCSE/E5/GTE).
// Owns: info_nce. Row i of the anchors and row i of the positives are a pair; every other row of
// the batch is a negative. Similarity is the cosine (rows are unit vectors) over a temperature.
#pragma once
#include <ATen/core/Tensor.h>

namespace slm::embed {

struct ContrastiveLoss {
  at::Tensor loss;     // scalar: the mean of the anchor->positive and positive->anchor cross-entropies
  double accuracy = 0;  // share of anchors whose own positive scores highest (both directions)
};

// anchors, positives (N, C), unit rows; temperature > 0.
ContrastiveLoss info_nce(const at::Tensor& anchors, const at::Tensor& positives, double temperature);

}  // namespace slm::embed
