// train/checkpoint_state.h: the integrity of a checkpoint's state.json, apart from the tensors.
// Owns: its checksum (XXH3 over the rest of the document, kept in its "checksum" field) and the
// checks that its numbers make sense for the folder they are in (the step is the folder's, counts
// are not negative, the loss scale is positive), so an edited or damaged state.json is refused in
// one line instead of training with a negative learning rate or another step's data position.
// Does not own: the shards' checksums or the layout (train/checkpoint.cpp). No torch here.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace slm::train {

// The checksum of `state` without its "checksum" field.
std::string state_checksum(const nlohmann::json& state);
// UserError naming dir/state.json and the first problem: a checksum that does not match (a state
// written before checksums were kept has none and is range-checked only), a step that is not a
// whole number >= 0 or not the step in the folder's name (step_00000030: 30), a negative AdamW
// step, loader position or good-step count, a loss scale that is not a positive finite number.
void check_state(const nlohmann::json& state, const std::string& dir);

}  // namespace slm::train
