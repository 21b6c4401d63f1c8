// cli/export_cmd.cpp: `slm export`: a checkpoint to Hugging Face format.
#include <cstdio>
#include <fmt/format.h>
#include <memory>

#include "cli/commands.h"
#include "data/manifest.h"
#include "model/hf_export.h"
#include "tokenizer/hf_files.h"
#include "train/checkpoint.h"
#include "util/error.h"

namespace slm::cli {
namespace {

struct ExportArgs {
  std::string source, out, format = "hf", tokenizer;
  bool force = false;
};

void run_export(const ExportArgs& a) {
  train::Config cfg;
  model::GPT2 m = train::load_model(a.source, &cfg);
  data::Manifest man = data::read_manifest(cfg.data.dir);
  std::string tok = a.tokenizer.empty() ? man.tokenizer_path : a.tokenizer;
  if (tokenizer::model_identity(tokenizer::load_tokenizer(tok)) != man.tokenizer_identity)
    throw UserError(fmt::format("{}: is not the tokenizer the model was trained with ({})", tok,
                                man.tokenizer_path));
  model::export_hf(m, tok, man.eot_id, a.out, a.force);
  std::printf("exported %s -> %s (model.safetensors, config.json, tokenizer); load with "
              "transformers.GPT2LMHeadModel.from_pretrained(\"%s\")\n",
              a.source.c_str(), a.out.c_str(), a.out.c_str());
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "write a trained model in Hugging Face format");
  cmd->add_option("source", a->source, "run directory (newest valid checkpoint) or checkpoint directory")
      ->required();
  cmd->add_option("-o,--out", a->out, "output directory")->required();
  cmd->add_option("--format", a->format, "output format")->capture_default_str()->check(CLI::IsMember({"hf"}));
  cmd->add_option("-t,--tokenizer", a->tokenizer,
                  "tokenizer directory (default: the one recorded in the dataset's manifest)");
  cmd->add_flag("--force", a->force, "replace the output directory if it exists");
  cmd->callback([a] { run_export(*a); });
}

}  // namespace slm::cli
