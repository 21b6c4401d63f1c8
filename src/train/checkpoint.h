// train/checkpoint.h: saving and resuming a run exactly.
// Owns: the checkpoint layout and save/find/load. A checkpoint is a directory
// RUN/checkpoints/step_00000100/ with model.pt (parameters by HF name + the CPU RNG state),
// optim.pt (AdamW moments and step counts) and state.json (step, data-loader position, dataset
// tokenizer identity, effective configuration, XXH3 checksums of both .pt files). It is written
// under a temporary name and renamed into place, so a crash leaves the previous ones intact.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "train/trainer.h"

namespace slm::train {

// Writes a checkpoint of t at t.step, then deletes all but the newest `keep`. Returns its path.
std::string save_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep);

// Newest checkpoint whose state.json parses and whose checksums match; each skipped (corrupt)
// newer one is reported through warn(). nullopt if there is none.
std::optional<std::string> find_latest_checkpoint(const std::string& run_dir,
                                                  const std::function<void(const std::string&)>& warn);

// The model of a checkpoint directory (or of the newest valid checkpoint of a run directory),
// on the CPU, with the configuration it was trained with. For export, eval and generate.
model::GPT2 load_model(const std::string& ckpt_or_run_dir, Config* cfg_out);

// Restores model, optimizer, step, loader position and RNG into t. UserError if the checkpoint
// belongs to another model (parameter names/shapes) or another tokenizer.
void load_checkpoint(Trainer& t, const std::string& ckpt_dir);

}  // namespace slm::train
