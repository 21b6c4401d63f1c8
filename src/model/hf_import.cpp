// model/hf_import.cpp: see hf_import.h.
#include "model/hf_import.h"

#include <torch/torch.h>

#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"

namespace slm::model {
namespace {

using json = nlohmann::json;

int64_t int_field(const json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw UserError(fmt::format("{}: \"{}\" is missing or not an integer", file, key));
  return j[key].get<int64_t>();
}

at::ScalarType dtype_of(const std::string& name, const std::string& file, const std::string& tensor) {
  if (name == "F32") return at::kFloat;
  if (name == "F16") return at::kHalf;
  if (name == "BF16") return at::kBFloat16;
  throw UserError(fmt::format("{}: tensor {} has dtype {}; slm reads F32, F16 and BF16", file, tensor, name));
}

}  // namespace

bool is_hf_dir(const std::string& dir) {
  return path_exists(dir + "/config.json") && path_exists(dir + "/model.safetensors") &&
         !path_exists(dir + "/state.json");
}

HfConfig read_hf_config(const std::string& dir, int64_t vocab_pad) {
  const std::string file = dir + "/config.json";
  json j;
  try {
    j = json::parse(read_file(file));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: not valid JSON ({})", file, e.what()));
  }
  if (j.value("model_type", "") != "gpt2")
    throw UserError(fmt::format("{}: model_type \"{}\" is not gpt2", file, j.value("model_type", "")));
  const std::string act = j.value("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    throw UserError(fmt::format("{}: activation_function \"{}\": slm's GPT-2 computes gelu_new (tanh)", file, act));
  if (std::abs(j.value("layer_norm_epsilon", 1e-5) - 1e-5) > 1e-12)
    throw UserError(fmt::format("{}: layer_norm_epsilon {} (slm uses 1e-5)", file, j.value("layer_norm_epsilon", 0.0)));
  if (!j.value("tie_word_embeddings", true))
    throw UserError(fmt::format("{}: tie_word_embeddings is false (slm ties the LM head to wte)", file));
  for (const char* flag : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"})
    if (j.value(flag, false)) throw UserError(fmt::format("{}: {} is not supported", file, flag));
  HfConfig h;
  GPT2Config& c = h.model;
  c.n_layer = int_field(j, "n_layer", file);
  c.n_head = int_field(j, "n_head", file);
  c.n_embd = int_field(j, "n_embd", file);
  c.block_size = int_field(j, "n_positions", file);
  c.vocab_size = int_field(j, "vocab_size", file);
  c.vocab_pad = vocab_pad;
  if (j.contains("n_inner") && !j["n_inner"].is_null() && j["n_inner"].get<int64_t>() != 4 * c.n_embd)
    throw UserError(fmt::format("{}: n_inner {} (slm's MLP is 4 x n_embd = {})", file,
                                j["n_inner"].get<int64_t>(), 4 * c.n_embd));
  if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer()) h.eos_id = j["eos_token_id"].get<int64_t>();
  validate(c);
  return h;
}

std::map<std::string, at::Tensor> load_safetensors(const std::string& path) {
  const std::string raw = read_file(path);
  uint64_t n = 0;
  if (raw.size() < 8 || (std::memcpy(&n, raw.data(), 8), n > raw.size() - 8))
    throw UserError(fmt::format("{}: not a safetensors file (bad header length)", path));
  json header;
  try {
    header = json::parse(raw.substr(8, n));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: not a safetensors file ({})", path, e.what()));
  }
  const size_t base = 8 + n;
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const at::ScalarType dt = dtype_of(info.at("dtype").get<std::string>(), path, name);
    const std::vector<int64_t> shape = info.at("shape").get<std::vector<int64_t>>();
    const auto range = info.at("data_offsets").get<std::vector<uint64_t>>();
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (range.size() != 2 || range[1] < range[0] || base + range[1] > raw.size() ||
        range[1] - range[0] != static_cast<uint64_t>(numel) * c10::elementSize(dt))
      throw UserError(fmt::format("{}: tensor {} has a bad byte range (file truncated?)", path, name));
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dt));
    std::memcpy(t.data_ptr(), raw.data() + base + range[0], range[1] - range[0]);
    out[name] = t.to(at::kFloat);
  }
  return out;
}

GPT2 load_hf(const std::string& dir, int64_t vocab_pad) {
  const HfConfig hc = read_hf_config(dir, vocab_pad);
  const GPT2Config& c = hc.model;
  const std::string file = dir + "/model.safetensors";
  std::map<std::string, at::Tensor> w = load_safetensors(file);
  GPT2 m = init_gpt2(c, 0);
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters(m)) {
    auto it = w.find("transformer." + name);
    if (it == w.end()) it = w.find(name);  // GPT2Model (no LM head) drops the prefix
    if (it == w.end()) throw UserError(fmt::format("{}: tensor transformer.{} is missing", file, name));
    at::Tensor v = it->second;
    const bool conv1d = name.rfind("h.", 0) == 0 && name.find(".weight") != std::string::npos && v.dim() == 2;
    if (conv1d) v = v.t();  // Conv1D stores (in, out)
    at::Tensor dst = name == "wte.weight" ? p.narrow(0, 0, std::min(c.vocab_size, p.size(0))) : p;
    if (!v.sizes().equals(dst.sizes()))
      throw UserError(fmt::format("{}: tensor {} has shape {}, config.json implies {}", file, it->first,
                                  fmt::join(it->second.sizes(), "x"), fmt::join(dst.sizes(), "x")));
    dst.copy_(v);
    if (name == "wte.weight") p.narrow(0, c.vocab_size, p.size(0) - c.vocab_size).zero_();  // padding rows
  }
  return m;
}

void copy_parameters(const GPT2& from, GPT2& to) {
  std::map<std::string, at::Tensor> src;
  for (auto& [name, p] : named_parameters(from)) src[name] = p;
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters(to)) {
    auto it = src.find(name);
    if (it == src.end() || !it->second.sizes().equals(p.sizes()))
      throw UserError(fmt::format("model: cannot initialise {} from the imported model (shape differs)", name));
    p.copy_(it->second);
  }
}

}  // namespace slm::model
