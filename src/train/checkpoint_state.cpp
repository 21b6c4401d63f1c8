// train/checkpoint_state.cpp: see checkpoint_state.h.
#include "train/checkpoint_state.h"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "util/error.h"
#include "util/hash.h"

namespace slm::train {
using json = nlohmann::json;

std::string state_checksum(const json& state) {
  json rest = state;
  rest.erase("checksum");
  return hash_hex(rest.dump());
}

namespace {

// The step in a checkpoint folder's name (step_00000030 -> 30), or -1 for another name (a copied
// checkpoint may be called anything).
int64_t step_of_folder(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "…/step_00000030/"
  const std::string name = p.filename().string();
  if (name.size() != 13 || name.rfind("step_", 0) != 0) return -1;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  return std::stoll(name.substr(5));
}

// v as a whole number >= 0, else a UserError naming `what`.
int64_t count_at(const json& v, const std::string& what, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw UserError(fmt::format("{}: {} is {}, not a whole number >= 0 (the file was edited or damaged)", where, what,
                                v.dump()));
  return v.get<int64_t>();
}

}  // namespace

void check_state(const json& state, const std::string& dir) {
  const std::string where = dir + "/state.json";
  if (state.contains("checksum") && state["checksum"] != state_checksum(state))
    throw UserError(fmt::format("{}: checksum mismatch (the file was edited or damaged)", where));
  const int64_t step = count_at(state.at("step"), "step", where);
  if (const int64_t folder = step_of_folder(dir); folder >= 0 && folder != step)
    throw UserError(fmt::format("{}: step {} is not the folder's step {} (the file was edited or copied)", where, step,
                                folder));
  count_at(state.at("adam_step"), "adam_step", where);
  count_at(state.at("loader").at("epoch"), "loader.epoch", where);
  count_at(state.at("loader").at("cursor"), "loader.cursor", where);
  if (state.contains("loss_scale")) {
    const json& scale = state["loss_scale"].at("scale");
    if (!scale.is_number() || !std::isfinite(scale.get<double>()) || scale.get<double>() <= 0)
      throw UserError(fmt::format("{}: loss_scale.scale is {}, not a positive number", where, scale.dump()));
    count_at(state["loss_scale"].at("good_steps"), "loss_scale.good_steps", where);
  }
}

}  // namespace slm::train
