// model/hf_export.cpp: see hf_export.h.
#include "model/hf_export.h"

#include <torch/torch.h>

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_files.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::model {
namespace fs = std::filesystem;

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  nlohmann::ordered_json header = {{"__metadata__", {{"format", "pt"}}}};
  std::vector<at::Tensor> data;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
    int64_t bytes = c.numel() * 4;
    header[name] = {{"dtype", "F32"}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // align the data to 8 bytes
  uint64_t n = h.size();
  AtomicFile f(path);
  f.write(&n, 8);  // little-endian on every platform LibTorch supports
  f.write(h);
  for (const at::Tensor& c : data) f.write(c.data_ptr(), static_cast<size_t>(c.numel()) * 4);
  f.commit();
}

void export_hf(const GPT2& m, const std::string& tokenizer_dir, int64_t eot_id,
               const std::string& dir, bool overwrite) {
  AtomicDir out(dir, overwrite);
  write_hf_files(m, tokenizer_dir, eot_id, out.dir());
  out.commit();
}

void write_hf_files(const GPT2& m, const std::string& tokenizer_dir, int64_t eot_id, const std::string& dir) {
  const GPT2Config& c = m.cfg;
  if (!m.wte.defined() || !m.ln_f_w.defined() || static_cast<int64_t>(m.h.size()) != c.n_layer)
    throw UserError("export: the model is not complete (a pipeline stage?)");
  std::vector<std::pair<std::string, at::Tensor>> t;
  for (const auto& [name, p] : named_parameters(m)) {
    at::Tensor v = p;
    if (name == "wte.weight") v = p.narrow(0, 0, c.vocab_size);  // drop the padding rows
    bool conv1d = name.find(".weight") != std::string::npos && p.dim() == 2 && name.rfind("h.", 0) == 0;
    if (conv1d) v = p.t();  // HF's Conv1D stores (in, out)
    t.emplace_back("transformer." + name, v);
  }
  save_safetensors(dir + "/model.safetensors", t);
  nlohmann::ordered_json cfg = {
      {"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"},
      {"vocab_size", c.vocab_size},           {"n_positions", c.block_size},
      {"n_ctx", c.block_size},                {"n_embd", c.n_embd},
      {"n_layer", c.n_layer},                 {"n_head", c.n_head},
      {"n_inner", nullptr},                   {"activation_function", "gelu_new"},
      {"resid_pdrop", c.dropout},             {"embd_pdrop", c.dropout},
      {"attn_pdrop", c.dropout},              {"layer_norm_epsilon", 1e-5},
      {"initializer_range", 0.02},            {"bos_token_id", eot_id},
      {"eos_token_id", eot_id},               {"tie_word_embeddings", true},
      {"torch_dtype", "float32"}};
  write_file_atomic(dir + "/config.json", cfg.dump(2) + "\n");
  // Read in whatever format slm accepts (vocab.json + merges.txt, encoder.json + vocab.bpe,
  // tokenizer.json) and written as GPT2Tokenizer's files, truncating at the model's context.
  tokenizer::write_tokenizer_files(tokenizer::load_tokenizer(tokenizer_dir), dir, c.block_size);
}

}  // namespace slm::model
