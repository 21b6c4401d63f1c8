// train/async_checkpoint.h: checkpoints that do not stall training (checkpoint.async = true).
// Owns: AsyncCheckpoint and its life: start (host copies of the state, taken on the training thread
// with the save's collectives, then this rank's files written by a background thread while training
// goes on), the per-step report of how the writing went (carried by the step's agreement in
// loop.cpp, so every rank decides at the same step), finishing (rank 0 checksums, writes
// state.json and renames the folder into place once every rank has written), and waiting for it
// (before the next save and at the end of the run). At most one is in flight. A failed write on any
// rank is the synchronous save's one-line error, with the previous checkpoints kept. Memory: a
// second host copy of what the rank saves (parameters and both AdamW moments) while in flight.
#pragma once
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint.h"

namespace slm::train {

struct AsyncCheckpoint {
  std::optional<CheckpointSnapshot> snap;  // in flight
  std::future<std::string> writing;        // this rank's files: "" or what went wrong
  std::optional<std::string> result;       // once `writing` is ready
};

// Collective. Call with none in flight (wait_async first).
void start_async(AsyncCheckpoint& a, const Trainer& t, const std::string& run_dir, int64_t keep);
// This rank's share of the step's agreement: {written, failed}, each 0 or 1 (both 0 with none in
// flight, so that an agreement begun before a save started never finishes it).
std::vector<double> async_status(AsyncCheckpoint& a);
// With the agreed sums of async_status over `ranks` ranks: finishes the checkpoint when every rank
// has written it (returns its path; rank 0 did the rename) and throws the one-line error when one
// failed; nullopt while writing goes on or with none in flight.
std::optional<std::string> on_agreed(AsyncCheckpoint& a, double written, double failed, int ranks);
// Blocks until the one in flight is written on every rank and finished (collective over the world
// when one is in flight); returns its path, or nullopt with none in flight.
std::optional<std::string> wait_async(AsyncCheckpoint& a, const Trainer& t);

}  // namespace slm::train
