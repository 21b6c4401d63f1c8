// train/checkpoint.cpp: see checkpoint.h.
#include "train/checkpoint.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace slm::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

static std::vector<std::string> checkpoint_dirs(const std::string& run_dir) {  // newest first
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir + "/checkpoints", ec)) {
    std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("step_", 0) == 0 && name.find('.') == std::string::npos)
      out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::string save_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep) {
  fs::create_directories(run_dir + "/checkpoints");
  const std::string path = fmt::format("{}/checkpoints/step_{:08d}", run_dir, t.step);
  AtomicDir dir(path, /*overwrite=*/true);
  {
    torch::serialize::OutputArchive model;
    for (const auto& [name, p] : model::named_parameters(t.model)) model.write(name, p.detach().cpu());
    model.write("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
    model.save_to(dir.dir() + "/model.pt");
    torch::serialize::OutputArchive optim;
    t.optim->save(optim);
    optim.save_to(dir.dir() + "/optim.pt");
  }
  data::LoaderState ls = t.train_loader->state();
  json state = {{"step", t.step},
                {"loader", {{"epoch", ls.epoch}, {"cursor", ls.cursor}}},
                {"tokenizer_identity", t.data.manifest.tokenizer_identity},
                {"config", to_toml(t.cfg)},
                {"checksums",
                 {{"model.pt", hash_file_hex(dir.dir() + "/model.pt")},
                  {"optim.pt", hash_file_hex(dir.dir() + "/optim.pt")}}}};
  write_file_atomic(dir.dir() + "/state.json", state.dump(2) + "\n");
  dir.commit();
  std::vector<std::string> all = checkpoint_dirs(run_dir);
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) fs::remove_all(all[i]);
  return path;
}

// Parses state.json and verifies the checksums; UserError describing the first problem.
static json read_state(const std::string& dir) {
  json state;
  try {
    state = json::parse(read_file(dir + "/state.json"));
    for (const char* f : {"model.pt", "optim.pt"})
      if (hash_file_hex(dir + "/" + f) != state.at("checksums").at(f).get<std::string>())
        throw UserError(fmt::format("{}/{}: checksum mismatch", dir, f));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}/state.json: malformed ({})", dir, e.what()));
  }
  return state;
}

std::optional<std::string> find_latest_checkpoint(const std::string& run_dir,
                                                  const std::function<void(const std::string&)>& warn) {
  for (const std::string& dir : checkpoint_dirs(run_dir)) {
    try {
      read_state(dir);
      return dir;
    } catch (const UserError& e) {
      warn(fmt::format("checkpoint {} is corrupt ({}); trying the previous one", dir, e.what()));
    }
  }
  return std::nullopt;
}

// Copies the parameters saved in dir/model.pt into m, checking names and shapes.
static void read_parameters(model::GPT2& m, const std::string& dir, torch::serialize::InputArchive& model) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : model::named_parameters(m)) {
    at::Tensor v;
    if (!model.try_read(name, v))
      throw UserError(fmt::format("{}: no parameter {}; saved from a different model", dir, name));
    if (v.sizes() != p.sizes())
      throw UserError(fmt::format("{}: parameter {} has shape {} but the model expects {}; saved "
                                  "from a different model",
                                  dir, name, fmt::join(v.sizes(), "x"), fmt::join(p.sizes(), "x")));
    p.copy_(v);
  }
}

model::GPT2 load_model(const std::string& path, Config* cfg_out) {
  std::string dir = path;
  if (!path_exists(path + "/state.json")) {
    std::optional<std::string> found = find_latest_checkpoint(
        path, [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
    if (!found) throw UserError(fmt::format("{}: no valid checkpoint (a run or checkpoint directory)", path));
    dir = *found;
  }
  json state = read_state(dir);
  Config cfg = parse_config_text(state.at("config").get<std::string>(), dir + "/state.json");
  model::GPT2 m = model::init_gpt2(cfg.model, 0);
  torch::serialize::InputArchive archive;
  archive.load_from(dir + "/model.pt");
  read_parameters(m, dir, archive);
  if (cfg_out) *cfg_out = cfg;
  return m;
}

void load_checkpoint(Trainer& t, const std::string& dir) {
  json state = read_state(dir);
  if (state.at("tokenizer_identity") != t.data.manifest.tokenizer_identity)
    throw UserError(fmt::format("{}: saved for data of another tokenizer than {}", dir, t.cfg.data.dir));
  torch::serialize::InputArchive model;
  model.load_from(dir + "/model.pt");
  read_parameters(t.model, dir, model);
  at::Tensor rng;
  if (model.try_read("rng.cpu", rng)) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(rng);
  }
  torch::serialize::InputArchive optim;
  optim.load_from(dir + "/optim.pt", t.device == "cpu" ? c10::optional<at::Device>() : at::Device(t.device));
  t.optim->load(optim);
  t.step = state.at("step").get<int64_t>();
  t.train_loader->restore({state.at("loader").at("epoch").get<int64_t>(),
                           state.at("loader").at("cursor").get<int64_t>()});
}

}  // namespace slm::train
