// embed/embedder.cpp: see embedder.h. Final hidden states = the model's blocks and final
// LayerNorm (model/gpt2.h pieces), without the LM head.
#include "embed/embedder.h"

#include <torch/torch.h>

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>

#include "model/autocast.h"
#include "util/hash.h"
#include "util/progress.h"

namespace slm::embed {

at::Tensor final_hidden(const model::GPT2& m, const at::Tensor& idx) {
  at::Tensor x = model::embed(m, idx, false);
  x = model::run_blocks(m, x, 0, m.h.size(), false);
  return at::layer_norm(x, {m.cfg.n_embd}, m.ln_f_w, m.ln_f_b, 1e-5);
}

at::Tensor padded_batch(const std::vector<const std::vector<int64_t>*>& rows, std::vector<int64_t>& lengths) {
  size_t T = 0;
  for (const auto* r : rows) T = std::max(T, r->size());
  at::Tensor idx = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(T)}, torch::kLong);
  auto a = idx.accessor<int64_t, 2>();
  lengths.clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    lengths.push_back(static_cast<int64_t>(rows[r]->size()));
    for (size_t t = 0; t < rows[r]->size(); ++t) a[static_cast<int64_t>(r)][static_cast<int64_t>(t)] = (*rows[r])[t];
  }
  return idx;
}

at::Tensor embed_windows(const model::GPT2& m, const std::vector<Window>& windows, const EmbedOptions& opt) {
  const int64_t n = static_cast<int64_t>(windows.size());
  at::Tensor out = torch::empty({n, m.cfg.n_embd}, torch::kFloat);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return windows[static_cast<size_t>(a)].ids.size() > windows[static_cast<size_t>(b)].ids.size();
  });
  torch::NoGradGuard no_grad;
  Progress progress("embed", n, "windows", opt.quiet);
  for (int64_t i = 0; i < n;) {  // longest first: each batch is padded to its first window
    const int64_t T = static_cast<int64_t>(windows[static_cast<size_t>(order[static_cast<size_t>(i)])].ids.size());
    const int64_t rows = std::max<int64_t>(1, std::min(n - i, opt.batch_tokens / T));
    std::vector<const std::vector<int64_t>*> batch;
    for (int64_t r = 0; r < rows; ++r) batch.push_back(&windows[static_cast<size_t>(order[static_cast<size_t>(i + r)])].ids);
    std::vector<int64_t> lengths;
    const at::Tensor idx = padded_batch(batch, lengths);
    at::Tensor v;
    {
      model::AutocastGuard autocast(opt.precision, opt.device);
      v = pool(final_hidden(m, idx.to(opt.device)), lengths, opt.pooling).cpu();
    }
    out.index_copy_(0, torch::from_blob(order.data() + i, {rows}, torch::kLong).clone(), v);
    i += rows;
    progress.add(rows);
  }
  progress.finish();
  return out;
}

std::string model_identity(const model::GPT2& m) {
  std::string digests;  // one hash per tensor, then a hash of them: memory stays one tensor
  for (const auto& [name, p] : model::named_parameters(m)) {
    at::Tensor t = p.detach();
    if (name == "wte.weight") t = t.narrow(0, 0, m.cfg.vocab_size);  // padding rows are not the model
    t = t.to(torch::kCPU, torch::kFloat).contiguous();
    const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    digests += hash_hex(fmt::format("{}:{}", name, fmt::join(sizes, ",")));
    digests += hash_hex({static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * sizeof(float)});
  }
  return hash_hex(digests);
}

}  // namespace slm::embed
