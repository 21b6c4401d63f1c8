// train/checkpoint.h: saving and resuming a run exactly, on any number of ranks.
// Owns: the checkpoint layout and save/find/load. A checkpoint is a directory
// RUN/checkpoints/step_00000100/ with
//   shard_00000.pt ...  a rank's buffer (parameters, both AdamW moments) with its segments:
//                       where each piece sits in the *whole model's* flat parameter vector
//                       (parallel/flat.h), and the writing rank's CPU RNG state. One file without
//                       ZeRO (rank 0 writes it), one per rank with ZeRO, each rank writing its own
//                       in parallel; with tensor parallelism one set per tp rank ("tp<r>_"), whose
//                       segments map its slices back into the whole matrices.
//   site<s>_shard_*.pt  DiLoCo ([sync] mode = "diloco"): site s's model and optimizer (s >= 1; site
//                       0's files have no prefix, so ordinary training and the tools read site 0);
//   outer_site<s>_*.pt  DiLoCo: every rank's outer state (parallel/diloco.h OuterState);
//   state.json          step, AdamW step, data-loader position, the layout (parameter names and
//                       shapes), the shards' ranges and XXH3 checksums, tokenizer identity and the
//                       effective configuration.
// Ranks write into step_X.partial/, then rank 0 renames it into place, so a crash leaves the
// previous checkpoints intact. Loading reassembles the whole flat vector from whatever shards exist
// and takes the pieces this rank needs: another world size, ZeRO stage, tensor-parallel degree or
// the single-process tools (export, eval, generate) can read any checkpoint. Assumes a filesystem
// all ranks share.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/trainer.h"
#include "util/error.h"

namespace torch::serialize {
class OutputArchive;
}

namespace slm::train {

// Writes a checkpoint of t at t.step, then deletes all but the newest `keep`. Collective over the
// world unless `solo` (one surviving rank saving a full copy after a peer was lost: needs the
// whole state, i.e. ZeRO 0). Returns its path.
std::string save_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep, bool solo = false);

// The three parts of a save, for asynchronous checkpoints (train/async_checkpoint.h):
// snapshot_checkpoint (collective: the partial folder, DiLoCo's syncs in flight; then host copies
// of what this rank writes), write_snapshot (no collectives, any thread: this rank's files), and
// finish_checkpoint (the leader, once every rank has written: checksums, state.json, the rename,
// pruning to `keep`). The last two return what went wrong, or "".
struct CheckpointSnapshot {
  int64_t step = 0, keep = 3;
  bool solo = false, leader = false;
  std::string run_dir, path, partial, disk_note;
  std::vector<std::pair<std::string, std::shared_ptr<torch::serialize::OutputArchive>>> archives;  // file, contents
  nlohmann::json state;  // the leader's state.json, without the shards' checksums
};
CheckpointSnapshot snapshot_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep, bool solo, bool copy);
std::string write_snapshot(CheckpointSnapshot& c);
std::string finish_checkpoint(CheckpointSnapshot& c);
// The one-line error of a save that failed (the partial folder removed by the leader).
UserError save_failed(const CheckpointSnapshot& c, const std::string& failure);

// Newest checkpoint whose state.json parses and whose checksums match; each skipped (corrupt)
// newer one is reported through warn(). nullopt if there is none; a UserError naming them if
// there are checkpoints but every one is corrupt (a caller must not start over on top of them).
std::optional<std::string> find_latest_checkpoint(const std::string& run_dir,
                                                  const std::function<void(const std::string&)>& warn);

// The model of a checkpoint directory (or of the newest valid checkpoint of a run directory),
// on the CPU, with the configuration it was trained with; or of a Hugging Face GPT-2 folder (then
// the configuration is the defaults with its shape and init.from = the folder, and no data.dir).
// For export, eval and generate.
model::GPT2 load_model(const std::string& ckpt_or_run_dir, Config* cfg_out);

// Restores parameters, this rank's optimizer shard, step, loader position and RNG into t.
// UserError if the checkpoint belongs to another model (parameter names/shapes) or tokenizer.
void load_checkpoint(Trainer& t, const std::string& ckpt_dir);
// The job's layout in words, "pp 2 x dp 1 x tp 1, ZeRO 0" (", DiLoCo" when it syncs across sites);
// checkpoints keep it (saved_by.layout) and restart events name it.
std::string describe_layout(const Trainer& t);
// The layout that saved a checkpoint ("" for checkpoints written before it was kept).
std::string saved_layout(const std::string& ckpt_dir);

}  // namespace slm::train
