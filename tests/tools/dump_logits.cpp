// tests/tools/dump_logits.cpp: test helper: loads a checkpoint (or run) and prints the logits of
// one token sequence as JSON rows, for the export parity test (tests/e2e/export_hf.sh).
// Usage: dump_logits CHECKPOINT_OR_RUN ID [ID ...]
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "model/gpt2.h"
#include "train/checkpoint.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  slm::train::Config cfg;
  slm::model::GPT2 m = slm::train::load_model(argv[1], &cfg);
  std::vector<int64_t> ids;
  for (int i = 2; i < argc; ++i) ids.push_back(std::atoll(argv[i]));
  torch::NoGradGuard g;
  at::Tensor idx = torch::tensor(ids, torch::kLong).view({1, -1});
  at::Tensor logits = slm::model::forward_logits(m, idx, false)[0].to(torch::kDouble);  // (T, V)
  std::printf("[");
  for (int64_t t = 0; t < logits.size(0); ++t) {
    std::printf(t ? ",\n[" : "[");
    for (int64_t v = 0; v < logits.size(1); ++v) std::printf(v ? ",%.9g" : "%.9g", logits[t][v].item<double>());
    std::printf("]");
  }
  std::printf("]\n");
  return 0;
}
