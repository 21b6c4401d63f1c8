// embed/contrastive.cpp: see contrastive.h.
#include "embed/contrastive.h"

#include <torch/torch.h>

namespace slm::embed {

ContrastiveLoss info_nce(const at::Tensor& anchors, const at::Tensor& positives, double temperature) {
  const at::Tensor logits = torch::matmul(anchors.to(torch::kFloat), positives.to(torch::kFloat).t()) / temperature;
  const at::Tensor target = torch::arange(logits.size(0), torch::TensorOptions().dtype(torch::kLong).device(logits.device()));
  ContrastiveLoss out;
  out.loss = (torch::nn::functional::cross_entropy(logits, target) +
              torch::nn::functional::cross_entropy(logits.t(), target)) / 2;
  const at::Tensor hits = logits.argmax(1).eq(target).sum() + logits.argmax(0).eq(target).sum();
  out.accuracy = hits.item<double>() / static_cast<double>(2 * logits.size(0));
  return out;
}

}  // namespace slm::embed
