// tests/train/checkpoint_state_test.cpp: a state.json that was edited or damaged is refused in one
// line naming the problem (each case here once trained or resumed silently: "step": -5 trained
// steps -4..0 with a negative learning rate, 1e12 exited without training, "adam_step": -3
// diverged, step 25 inside step_00000030 resumed with step 30's data position).
#include "train/checkpoint_state.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace slm::train {
namespace {

nlohmann::json good_state() {
  nlohmann::json s = {{"format", 2}, {"step", 30}, {"adam_step", 30},
                      {"loss_scale", {{"scale", 65536.0}, {"good_steps", 4}}},
                      {"loader", {{"epoch", 0}, {"cursor", 960}}},
                      {"shards", {{{"file", "shard_00000.pt"}, {"checksum", "abc"}}}}};
  s["checksum"] = state_checksum(s);
  return s;
}

std::string error_of(const nlohmann::json& s, const std::string& dir = "run/checkpoints/step_00000030") {
  try {
    check_state(s, dir);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// An edit that keeps the checksum right (as a tool rewriting the file would): the range checks.
nlohmann::json edited(const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json s = good_state();
  s[nlohmann::json::json_pointer(pointer)] = value;
  s["checksum"] = state_checksum(s);
  return s;
}

TEST(CheckpointState, AcceptsWhatASaveWrites) {
  EXPECT_EQ(error_of(good_state()), "");
  EXPECT_EQ(error_of(good_state(), "run/checkpoints/step_00000030/"), "");
  EXPECT_EQ(error_of(good_state(), "copied_checkpoint"), "");  // any other name: no step to compare
  nlohmann::json old = good_state();
  old.erase("checksum");  // written before checksums were kept
  EXPECT_EQ(error_of(old), "");
  // The checksum survives the file's round trip (dump with indent, parse).
  EXPECT_EQ(error_of(nlohmann::json::parse(good_state().dump(1))), "");
}

TEST(CheckpointState, RefusesEditsAndNonsense) {
  nlohmann::json s = good_state();
  s["step"] = -5;  // edited by hand: the checksum no longer matches
  EXPECT_EQ(error_of(s), "run/checkpoints/step_00000030/state.json: checksum mismatch (the file was edited or damaged)");
  EXPECT_NE(error_of(edited("/step", -5)).find("step is -5, not a whole number >= 0"), std::string::npos);
  EXPECT_NE(error_of(edited("/step", 1e12)).find("step is 1000000000000.0, not a whole number"), std::string::npos);
  EXPECT_NE(error_of(edited("/step", 25)).find("step 25 is not the folder's step 30"), std::string::npos);
  EXPECT_NE(error_of(edited("/adam_step", -3)).find("adam_step is -3"), std::string::npos);
  EXPECT_NE(error_of(edited("/loader/cursor", -1)).find("loader.cursor is -1"), std::string::npos);
  EXPECT_NE(error_of(edited("/loss_scale/scale", -2.0)).find("loss_scale.scale is -2.0, not a positive number"),
            std::string::npos);
  EXPECT_NE(error_of(edited("/loss_scale/good_steps", "x")).find("loss_scale.good_steps is \"x\""), std::string::npos);
}

}  // namespace
}  // namespace slm::train
