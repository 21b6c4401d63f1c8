// embed/embed_model.cpp: see embed_model.h.
#include "embed/embed_model.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>

#include "host/device.h"
#include "model/hf_import.h"
#include "tokenizer/encoder.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::embed {

std::string model_path(const std::string& source) {
  return !model::is_hf_dir(source) && model::is_hf_dir(source + "/model") ? source + "/model" : source;
}

// A run folder's newest valid checkpoint (source itself for anything else): an index made from a
// run records that checkpoint, not the folder, so it stays usable while the run trains on.
static std::string newest_checkpoint_of_run(const std::string& source) {
  if (model::is_hf_dir(source) || path_exists(source + "/state.json") || !path_exists(source + "/checkpoints"))
    return source;
  const auto found = train::find_latest_checkpoint(
      source, [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
  return found ? *found : source;
}

EmbedModel load_embed_model(const std::string& given, const std::string& device) {
  const std::string source = newest_checkpoint_of_run(model_path(given));
  EmbedModel m;
  train::Config cfg;
  m.model = train::load_model(source, &cfg);
  m.tok = train::model_tokenizer(source, cfg, "");
  m.source = std::filesystem::absolute(source).lexically_normal().string();
  m.identity = model_identity(m.model);
  m.device = host::resolve_device(device, "gloo");
  for (auto& [name, p] : model::named_parameters(m.model)) {
    p.requires_grad_(false);
    if (m.device != "cpu") p.set_data(p.data().to(m.device));
  }
  return m;
}

at::Tensor embed_texts(const EmbedModel& m, const std::vector<std::string>& texts, int64_t window,
                       const EmbedOptions& opt) {
  tokenizer::Encoder enc(m.tok.tok);
  std::vector<Window> ws;
  for (const std::string& t : texts) {
    std::vector<Window> w = cut_windows(m.tok.tok, enc, t, 0, window, window - 1, m.tok.eot_id);
    if (w.empty()) throw UserError("empty query: give some text to search for");
    ws.push_back(std::move(w.front()));
  }
  return embed_windows(m.model, ws, opt);
}

}  // namespace slm::embed
