// train/events.cpp: see events.h.
#include "train/events.h"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace slm::train {

std::pair<int64_t, double> last_logged_step(const std::string& run) {
  std::ifstream in(run + "/metrics.jsonl", std::ios::binary | std::ios::ate);
  if (!in) return {0, 0};
  const std::streamoff size = in.tellg(), tail = std::min<std::streamoff>(size, 1 << 16);
  in.seekg(size - tail);
  std::string text(static_cast<size_t>(tail), '\0');
  in.read(text.data(), tail);
  std::pair<int64_t, double> last{0, 0};
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {  // the first line may be cut: parse errors skip it
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("loss") && j.contains("step") && j["step"].is_number_integer())
      last = {j["step"].get<int64_t>(), j.value("time", 0.0)};
  }
  return last;
}

void append_restart_event(const std::string& run, const RestartEvent& e) {
  const nlohmann::json j = {{"event", "restart"},        {"time", e.time},           {"restart", e.restart},
                            {"cause", e.cause},          {"resumed_step", e.resumed_step},
                            {"last_step", e.last_step},  {"steps_lost", e.steps_lost()},
                            {"down_s", e.down_s},        {"world", e.world},         {"layout", e.layout},
                            {"old_layout", e.old_layout}};
  const std::string path = run + "/events.jsonl";
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw UserError(path + ": cannot open for writing");
  const bool ok = std::fprintf(f, "%s\n", j.dump().c_str()) > 0;
  if (std::fclose(f) != 0 || !ok) throw UserError(path + ": cannot write");
}

std::vector<RestartEvent> read_restart_events(const std::string& run) {
  std::vector<RestartEvent> out;
  std::ifstream in(run + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("event", "") != "restart") continue;
    try {
      out.push_back({j.value("time", 0.0), j.value("restart", 0), j.value("cause", ""),
                     j.value("resumed_step", int64_t{0}), j.value("last_step", int64_t{0}), j.value("down_s", 0.0),
                     j.value("world", 1), j.value("layout", ""), j.value("old_layout", "")});
    } catch (const nlohmann::json::exception&) {  // a field of the wrong type: skip the line
    }
  }
  return out;
}

std::vector<std::string> read_launcher_events(const std::string& run) {
  std::vector<std::string> out;
  std::ifstream in(run + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    try {
      const std::string kind = j.value("event", "");
      if (kind == "restart_failed")
        out.push_back(fmt::format("restart {} ({}) failed before it resumed: {}", j.value("restart", 0),
                                  j.value("cause", ""), j.value("failure", "")));
      else if (kind == "gave_up")
        out.push_back(fmt::format("gave up after {} restarts (last: {})", j.value("restarts", 0), j.value("cause", "")));
    } catch (const nlohmann::json::exception&) {  // a field of the wrong type: skip the line
    }
  }
  return out;
}

std::string describe(const RestartEvent& e) {
  const bool moved = !e.old_layout.empty() && e.old_layout != e.layout;
  return fmt::format("restart {} ({}): resumed at step {}, {} finished step{} lost, down {:.1f} s, {} rank{} ({}{})",
                     e.restart, e.cause, e.resumed_step, e.steps_lost(), e.steps_lost() == 1 ? "" : "s", e.down_s,
                     e.world, e.world == 1 ? "" : "s", e.layout, moved ? "; was " + e.old_layout : "");
}

}  // namespace slm::train
