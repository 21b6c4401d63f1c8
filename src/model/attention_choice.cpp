// model/attention_choice.cpp: see attention_choice.h.
#include "model/attention_choice.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"

namespace slm::model {

std::vector<std::string> attention_candidates(const std::string& setting) {
  if (setting == "auto") return {"cudnn", "flash", "efficient"};
  if (setting == "default") return {};
  for (const char* one : {"cudnn", "flash", "efficient", "math"})
    if (setting == one) return {setting};
  throw UserError(fmt::format("system: attention \"{}\" is not one of auto, cudnn, flash, efficient, math, default",
                              setting));
}

std::string attention_key(const std::string& gpu, const std::string& torch_version, int64_t B, int64_t H, int64_t T,
                          int64_t D, const std::string& dtype, bool train) {
  return fmt::format("{}|torch {}|B{} H{} T{} D{} {} causal {}", gpu, torch_version, B, H, T, D, dtype,
                     train ? "train" : "eval");
}

std::string fastest_attention(const std::vector<AttentionTiming>& timings) {
  const AttentionTiming* best = nullptr;
  for (const AttentionTiming& t : timings)
    if (t.ms >= 0 && (!best || t.ms < best->ms)) best = &t;
  return best ? best->backend : "";
}

std::string describe_attention_choice(const std::string& key, const std::vector<AttentionTiming>& timings,
                                      const std::string& chosen) {
  std::string times;
  for (const AttentionTiming& t : timings)
    times += (times.empty() ? "" : ", ") +
             (t.ms >= 0 ? fmt::format("{} {:.3f} ms", t.backend, t.ms) : t.backend + " cannot run it");
  const size_t shape = key.rfind('|');
  return fmt::format("{} for {} ({})", chosen.empty() ? "LibTorch's default" : chosen,
                     shape == std::string::npos ? key : key.substr(shape + 1), times);
}

AttentionChoices::AttentionChoices(std::string file) : file_(std::move(file)) {
  if (file_.empty() || !path_exists(file_)) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(file_));
    for (const auto& [k, v] : j.items())
      if (v.is_string()) chosen_[k] = v.get<std::string>();
  } catch (const std::exception&) {  // a damaged cache: measure again
    chosen_.clear();
  }
}

std::optional<std::string> AttentionChoices::find(const std::string& key) const {
  const auto it = chosen_.find(key);
  if (it == chosen_.end()) return std::nullopt;
  return it->second;
}

void AttentionChoices::remember(const std::string& key, const std::string& backend) {
  chosen_[key] = backend;
  if (file_.empty()) return;
  try {
    write_file_atomic(file_, nlohmann::json(chosen_).dump(1) + "\n");
  } catch (const std::exception&) {  // a read-only cache: the choice holds for this run
  }
}

}  // namespace slm::model
