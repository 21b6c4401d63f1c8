// report/trace.cpp: see trace.h.
#include "report/trace.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"

namespace slm::report {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::pair<int, std::string>> rank_files(const std::string& run_dir, const std::string& folder) {
  std::vector<std::pair<int, std::string>> out;
  const fs::path dir = fs::path(run_dir) / folder;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    int rank = -1;
    if (e.path().extension() == ".json" && std::sscanf(e.path().filename().c_str(), "rank_%d.json", &rank) == 1)
      out.emplace_back(rank, e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// "wait activations 3.1" -> "wait activations": the event's name without its micro-batch.
std::string kind_of(const std::string& name) {
  const size_t sp = name.rfind(' ');
  return sp != std::string::npos && sp + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[sp + 1]))
             ? name.substr(0, sp) : name;
}

json read_trace(const fs::path& p) {
  try {
    json j = json::parse(read_file(p.string()));
    if (!j.contains("traceEvents") || !j["traceEvents"].is_array()) throw std::runtime_error("no traceEvents");
    return j;
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{}: not a trace written by `slm train` ({})", p.string(), e.what()));
  }
}
}  // namespace

std::vector<RankTrace> read_traces(const std::string& run_dir) {
  std::vector<RankTrace> out;
  for (const auto& [rank, path] : rank_files(run_dir, "trace")) {
    RankTrace r;
    r.rank = rank;
    const json file = read_trace(path);
    for (const json& e : file["traceEvents"]) {
      const std::string name = e.value("name", ""), ph = e.value("ph", "");
      if (ph == "M") {
        if (name == "process_name") r.name = e["args"].value("name", "");
        continue;
      }
      const double s = e.value("dur", 0.0) / 1e6;
      const int lane = e.value("tid", 0);
      if (lane == 2) r.steps += 1, r.step_s += s;
      else if (lane == 3) r.inside_s += s;
      else if (lane == 1) r.waits_s += s, r.waits[kind_of(name)] += s;
      else if (name.rfind("F ", 0) == 0) r.forward_s += s;
      else if (name.rfind("B ", 0) == 0) r.backward_s += s;
      else r.other_compute_s += s;
    }
    const double n = std::max(1, r.steps);
    r.step_s /= n, r.forward_s /= n, r.backward_s /= n, r.other_compute_s /= n, r.waits_s /= n, r.inside_s /= n;
    for (auto& [k, v] : r.waits) v /= n;
    out.push_back(r);
  }
  return out;
}

bool merge_traces(const std::string& run_dir, const std::string& out) {
  const auto files = rank_files(run_dir, "trace");
  if (files.empty()) return false;
  json all = json::array();
  for (const auto& [rank, path] : files) {
    json file = read_trace(path);
    for (json& e : file["traceEvents"]) all.push_back(std::move(e));
  }
  write_file_atomic(out, json{{"displayTimeUnit", "ms"}, {"traceEvents", all}}.dump() + "\n");
  return true;
}

std::string trace_table(const std::vector<RankTrace>& ranks) {
  std::string t =
      "| rank | steps | step s | forward s | backward s | of which tp all-reduces s | other compute s | waits s | largest waits |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const RankTrace& r : ranks) {
    std::vector<std::pair<double, std::string>> w;
    for (const auto& [k, v] : r.waits) w.emplace_back(v, k);
    std::sort(w.rbegin(), w.rend());
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(3, w.size()); ++i)
      largest += fmt::format("{}{} {:.3f}", i ? ", " : "", w[i].second, w[i].first);
    t += fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} |\n",
                     r.name.empty() ? std::to_string(r.rank) : r.name, r.steps, r.step_s, r.forward_s, r.backward_s,
                     r.inside_s, r.other_compute_s, r.waits_s, largest);
  }
  return t;
}

}  // namespace slm::report
